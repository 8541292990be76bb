/* rmm/detail/thrust_namespace.h -- when Thrust is built in a wrapped
 * namespace (THRUST_WRAPPED_NAMESPACE), makes its thrust:: visible inside
 * rmm:: as RMM's headers expect. Needs Thrust's headers. */
#pragma once
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
