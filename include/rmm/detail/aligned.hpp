/* rmm/detail/aligned.hpp -- RMM's older spellings of the alignment helpers,
 * and host allocation at an alignment over any allocation function (the
 * offset to the original pointer is stored just before the aligned one, as
 * RMM's helpers do, so that either side may free the other's). */
#pragma once
#include <rmm/aligned.hpp>

#include <cassert>
#include <cstddef>
#include <memory>

namespace RMM_NAMESPACE::detail {

template <typename Alloc>
void* aligned_host_allocate(std::size_t bytes, std::size_t alignment, Alloc alloc) {
  assert(rmm::is_supported_alignment(alignment));
  std::size_t space = bytes + alignment + sizeof(std::ptrdiff_t);
  char* const original = static_cast<char*>(alloc(space));
  void* aligned = original + sizeof(std::ptrdiff_t);
  std::align(alignment, bytes, aligned, space);
  std::ptrdiff_t const offset = static_cast<char*>(aligned) - original;
  *(static_cast<std::ptrdiff_t*>(aligned) - 1) = offset;
  return aligned;
}

template <typename Dealloc>
void aligned_host_deallocate(void* ptr, [[maybe_unused]] std::size_t bytes, [[maybe_unused]] std::size_t alignment,
                             Dealloc dealloc) noexcept {
  assert(rmm::is_supported_alignment(alignment));
  if (ptr != nullptr) {
    std::ptrdiff_t const offset = *(static_cast<std::ptrdiff_t*>(ptr) - 1);
    dealloc(static_cast<char*>(ptr) - offset);
  }
}

}  // namespace RMM_NAMESPACE::detail
