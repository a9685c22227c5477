// SPDX-License-Identifier: MIT
// Tests of core/version.hpp: the macros, dptrain::version() and the CMake package's version agree.
#include <catch2/catch.hpp>

#include <string>

#include "dptrain/core/version.hpp"

// tests/CMakeLists.txt passes the version that CMake's project() holds, which becomes the
// installed package's version (dptrainConfigVersion.cmake).
#ifndef DPTRAIN_CMAKE_VERSION
#error "tests/CMakeLists.txt defines DPTRAIN_CMAKE_VERSION as the CMake project's version"
#endif

static_assert(!dptrain::version().empty(), "dptrain::version() is a constant expression");

TEST_CASE("version: dptrain::version() is the version of the CMake package", "[core][version]") {
  CHECK(std::string(dptrain::version()) == DPTRAIN_CMAKE_VERSION);
}

TEST_CASE("version: the macros spell dptrain::version() and order versions as one number", "[core][version]") {
  const std::string from_macros = std::to_string(DPTRAIN_VERSION_MAJOR) + "." + std::to_string(DPTRAIN_VERSION_MINOR) +
                                  "." + std::to_string(DPTRAIN_VERSION_PATCH);
  CHECK(std::string(dptrain::version()) == from_macros);
  CHECK(DPTRAIN_VERSION == DPTRAIN_VERSION_MAJOR * 10000 + DPTRAIN_VERSION_MINOR * 100 + DPTRAIN_VERSION_PATCH);
  // Two decimal digits each, or DPTRAIN_VERSION would not order versions.
  CHECK(DPTRAIN_VERSION_MINOR < 100);
  CHECK(DPTRAIN_VERSION_PATCH < 100);
}
