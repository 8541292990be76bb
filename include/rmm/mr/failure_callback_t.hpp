/* rmm/mr/failure_callback_t.hpp -- the failure callback's type. */
#pragma once
#include <rmm/detail/export.hpp>

#include <cstddef>
#include <functional>

namespace RMM_NAMESPACE::mr {
using failure_callback_t = std::function<bool(std::size_t, void*)>;
}  // namespace RMM_NAMESPACE::mr
