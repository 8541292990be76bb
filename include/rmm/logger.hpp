/* rmm/logger.hpp -- RMM's debug-log macros (rmmgo: librmmgo has no C++
 * debug log; the macros evaluate nothing). */
#pragma once
#include <rmm/detail/export.hpp>

#define RMM_LOG_TRACE(...) (void)0
#define RMM_LOG_DEBUG(...) (void)0
#define RMM_LOG_INFO(...) (void)0
#define RMM_LOG_WARN(...) (void)0
#define RMM_LOG_ERROR(...) (void)0
#define RMM_LOG_CRITICAL(...) (void)0
