// The C++ side of the outside project: the installed rmmgo.hpp compiles
// with the target's include directory, and the library links.
#include <rmmgo.hpp>

#include <cstdio>
#include <cstring>

int main() {
  if (std::strcmp(rmm_version(), RMMGO_VERSION_STRING) != 0) {
    return 1;
  }
  std::printf("consumer_cpp: rmmgo.hpp compiles against the installed package\n1 passed, 0 failed\n");
  return 0;
}
