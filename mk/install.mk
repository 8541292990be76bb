# Installing the C and C++ library. Included by the Makefile.
#
#   make install PREFIX=$HOME/.local     librmmgo.so, rmmgo.h, rmmgo.hpp and
#                                        rmmgo/*.hpp, the CMake package
#                                        (find_package(rmmgo)) and the
#                                        pkg-config module (rmmgo) under PREFIX
#                                        (default /usr/local)
#   make install DESTDIR=/tmp/stage PREFIX=/usr
#                                        the same tree under DESTDIR, for a
#                                        package (its files still say PREFIX;
#                                        the .pc and CMake files find their
#                                        paths relative to themselves, so the
#                                        tree also works where it lies)
#
# It builds and installs with CMake (CMakeLists.txt, in $(CMAKE_BUILD)), the
# one description of what is installed where. CMAKE_FLAGS adds to CMake's
# configure step. test-cmake (mk/capi.mk) installs with DESTDIR and builds
# tests/cmake-consumer against the tree with CMake and with pkg-config; the
# README's own commands (tests/readme) install with PREFIX.

PREFIX       ?= /usr/local
DESTDIR      ?=
CMAKE_BUILD  ?= $(BUILD)/cmake
CMAKE_FLAGS  ?=

.PHONY: install

install: | setup
	cmake -S . -B $(CMAKE_BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(abspath $(PREFIX)) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(CMAKE_BUILD) -j 2
	DESTDIR=$(if $(DESTDIR),$(abspath $(DESTDIR))) cmake --install $(CMAKE_BUILD)
	@pcdir=$$(dirname $$(find $(abspath $(DESTDIR)$(abspath $(PREFIX))) -path '*/pkgconfig/rmmgo.pc' | head -1)); \
	  echo "== rmmgo installed in $(DESTDIR)$(abspath $(PREFIX)): C and C++ programs build against it with"; \
	  echo "   PKG_CONFIG_PATH=$$pcdir pkg-config --cflags --libs rmmgo"; \
	  echo "   cmake -DCMAKE_PREFIX_PATH=$(DESTDIR)$(abspath $(PREFIX)) ... (find_package(rmmgo) -> rmmgo::rmmgo)"
