/* rmm/detail/aligned.hpp -- RMM's older spellings of the alignment helpers,
 * and aligned host allocation over any allocate function: the block asked
 * of alloc is padded so that an aligned address with room for bytes fits in
 * it, and the distance back to the block's start is kept just before the
 * address handed out, where aligned_host_deallocate finds it (rmmgo). */
#pragma once
#include <rmm/aligned.hpp>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace RMM_NAMESPACE::detail {

/// bytes aligned to alignment (a power of 2), from alloc(size) -> void*.
template <typename Alloc>
void* aligned_host_allocate(std::size_t bytes, std::size_t alignment, Alloc alloc) {
  assert(rmm::is_supported_alignment(alignment));
  std::size_t const header = sizeof(std::ptrdiff_t);
  auto* const block = static_cast<char*>(alloc(bytes + alignment + header));
  auto const first = reinterpret_cast<std::uintptr_t>(block) + header;
  auto const aligned = (first + alignment - 1) & ~(static_cast<std::uintptr_t>(alignment) - 1);
  char* const out = block + (aligned - reinterpret_cast<std::uintptr_t>(block));
  std::ptrdiff_t const back = out - block;
  std::memcpy(out - header, &back, header);
  return out;
}

/// Gives back to dealloc(block) what aligned_host_allocate handed out as ptr.
template <typename Dealloc>
void aligned_host_deallocate(void* ptr, [[maybe_unused]] std::size_t bytes, [[maybe_unused]] std::size_t alignment,
                             Dealloc dealloc) noexcept {
  assert(rmm::is_supported_alignment(alignment));
  if (ptr == nullptr) { return; }
  std::ptrdiff_t back = 0;
  std::memcpy(&back, static_cast<char*>(ptr) - sizeof(std::ptrdiff_t), sizeof back);
  dealloc(static_cast<char*>(ptr) - back);
}

}  // namespace RMM_NAMESPACE::detail
