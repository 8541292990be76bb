/* rmm/detail/thrust_namespace.h -- makes `thrust::` name Thrust inside rmm
 * when Thrust is built in a wrapped namespace (THRUST_WRAPPED_NAMESPACE).
 * Needs Thrust's headers: not checked with tests/cpp/fake_cccl, which has
 * none (FAKE_CCCL_VERSION). */
#pragma once
#ifndef FAKE_CCCL_VERSION
#include <thrust/detail/config.h>

#ifdef THRUST_WRAPPED_NAMESPACE
namespace THRUST_WRAPPED_NAMESPACE {
namespace thrust {
}
}  // namespace THRUST_WRAPPED_NAMESPACE
namespace rmm {
using namespace THRUST_WRAPPED_NAMESPACE;
}
#endif
#endif
