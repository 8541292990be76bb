/* rmm/detail/exec_check_disable.hpp -- silences nvcc's host/device call
 * checks on a function (nvcc only). */
#pragma once
#if defined(__CUDACC__) && defined(__NVCC__)
#define RMM_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define RMM_EXEC_CHECK_DISABLE
#endif
