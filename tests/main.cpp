// SPDX-License-Identifier: MIT
// Catch2's main for the single test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
