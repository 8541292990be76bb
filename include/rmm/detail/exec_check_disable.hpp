/* rmm/detail/exec_check_disable.hpp -- RMM_EXEC_CHECK_DISABLE: tells nvcc not
 * to check host/device calls in the function that follows (nothing elsewhere). */
#pragma once
#if defined(__CUDACC__) && defined(__NVCC__)
#define RMM_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define RMM_EXEC_CHECK_DISABLE
#endif
