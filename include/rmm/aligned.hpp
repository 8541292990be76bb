/* rmm/aligned.hpp -- alignment helpers (rmmgo). */
#pragma once
#include <rmm/detail/export.hpp>

#include <cassert>
#include <cstddef>
#include <cstdint>

namespace RMM_NAMESPACE {

/// The alignment every resource guarantees (as cudaMalloc).
static constexpr std::size_t CUDA_ALLOCATION_ALIGNMENT{256};
/// The alignment of host allocations.
static constexpr std::size_t RMM_DEFAULT_HOST_ALIGNMENT{alignof(std::max_align_t)};

[[nodiscard]] constexpr bool is_pow2(std::size_t value) noexcept { return value != 0 && (value & (value - 1)) == 0; }
[[nodiscard]] constexpr bool is_supported_alignment(std::size_t alignment) noexcept { return is_pow2(alignment); }
[[nodiscard]] constexpr std::size_t align_up(std::size_t value, std::size_t alignment) noexcept {
  assert(is_supported_alignment(alignment));
  return (value + (alignment - 1)) & ~(alignment - 1);
}
[[nodiscard]] constexpr std::size_t align_down(std::size_t value, std::size_t alignment) noexcept {
  assert(is_supported_alignment(alignment));
  return value & ~(alignment - 1);
}
[[nodiscard]] constexpr bool is_aligned(std::size_t value, std::size_t alignment) noexcept {
  assert(is_supported_alignment(alignment));
  return value == align_down(value, alignment);
}
[[nodiscard]] inline bool is_pointer_aligned(void* ptr, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) noexcept {
  return is_aligned(reinterpret_cast<std::uintptr_t>(ptr), alignment);
}

}  // namespace RMM_NAMESPACE
