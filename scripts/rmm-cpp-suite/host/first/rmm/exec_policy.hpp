// harness only: a policy that syncs the device, for host-run "thrust" on the simulated device
#pragma once
#include <rmm/cuda_stream_view.hpp>
#include <rmmgo.h>
namespace rmm {
struct exec_policy { explicit exec_policy(cuda_stream_view = {}) { rmm_device_synchronize(); } };
}
#define THRUST_NS_QUALIFIER ::thrust
