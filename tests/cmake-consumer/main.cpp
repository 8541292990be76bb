// The C++ side of the outside project: the installed headers compile with
// the target's include directory, one topic header alone first and then the
// whole of rmmgo.hpp, and a pool over CUDA memory allocates through them.
#include <rmmgo/resources.hpp>  // alone: it brings everything it needs

#include <rmmgo.hpp>

#include <cstdio>
#include <cstring>
#include <exception>

int main() {
  if (std::strcmp(rmm_version(), RMMGO_VERSION_STRING) != 0) {
    std::fprintf(stderr, "consumer_cpp: header %s, library %s\n", RMMGO_VERSION_STRING, rmm_version());
    return 1;
  }
  try {
    rmmgo::mr::cuda_memory_resource cuda;
    rmmgo::mr::pool_memory_resource pool{cuda, 1 << 20};
    rmmgo::device_buffer buffer{4096, rmmgo::cuda_stream_default, pool};
    if (buffer.size() != 4096 || pool.used_bytes() < 4096) {
      std::fprintf(stderr, "consumer_cpp: buffer of %zu bytes, pool uses %zu\n", buffer.size(), pool.used_bytes());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_cpp: %s\n", e.what());
    return 1;
  }
  std::printf("consumer_cpp: the installed rmmgo.hpp and rmmgo/*.hpp work from an outside project\n1 passed, 0 failed\n");
  return 0;
}
