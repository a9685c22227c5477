#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages dptrain's tests need, then builds and runs them four ways:
#   1. g++, Release: every test and example; the benchmarks are built (never run here)
#   2. clang++ (libomp) with AddressSanitizer + UndefinedBehaviorSanitizer: every test and example
#   3. clang++ with ThreadSanitizer and libomp's Archer tool: the threaded tests
#   4. libFuzzer: each fuzz target replays its corpus, then fuzzes for FUZZ_SECONDS (default 30),
#      as many targets at once as there are cores
# Any failure, sanitizer report or fuzzer finding stops the script with a non-zero status.
# This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# libclang-rt-14-dev: the sanitizer and libFuzzer runtimes of clang 14.
# dataset-fashion-mnist: the real-data smoke test (skipped, with a message, without it).
# libopenmpi-dev, openmpi-bin: the MPI component and its tests under mpiexec.
packages=(cmake ninja-build g++ clang libomp-14-dev libclang-rt-14-dev libeigen3-dev catch2 libbenchmark-dev
  libcli11-dev zlib1g-dev dataset-fashion-mnist libopenmpi-dev openmpi-bin)
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi
jobs="$(nproc)"
# -O1 with assertions on: sanitizer builds compile fast and still check Eigen's bounds.
sanitized=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O1)

echo "== 1/4 g++: configure, build, test in build/test-g++"
cmake -S . -B build/test-g++ -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ \
  -DDPTRAIN_BUILD_EXAMPLES=ON -DDPTRAIN_BUILD_BENCHMARKS=ON
cmake --build build/test-g++
ctest --test-dir build/test-g++ --output-on-failure -j "$jobs"

echo "== 2/4 clang++ with AddressSanitizer and UndefinedBehaviorSanitizer in build/test-asan"
cmake -S . -B build/test-asan -G Ninja "${sanitized[@]}" -DDPTRAIN_SANITIZE=address,undefined \
  -DDPTRAIN_BUILD_EXAMPLES=ON -DDPTRAIN_BUILD_BENCHMARKS=OFF
cmake --build build/test-asan
# One suppression, a leak inside libomp itself: see tests/sanitizers/lsan.supp.
ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp" \
  ctest --test-dir build/test-asan --output-on-failure -j "$jobs"

echo "== 3/4 clang++ with ThreadSanitizer and Archer (libomp's OpenMP-aware race detection) in build/test-tsan"
cmake -S . -B build/test-tsan -G Ninja "${sanitized[@]}" -DDPTRAIN_SANITIZE=thread \
  -DDPTRAIN_BUILD_EXAMPLES=OFF -DDPTRAIN_BUILD_BENCHMARKS=OFF
cmake --build build/test-tsan --target dptrain_tests
# Archer tells ThreadSanitizer about libomp's barriers and tasks; libomp itself is not
# instrumented, hence ignore_noninstrumented_modules. Suppressions: none.
OMP_TOOL_LIBRARIES=/usr/lib/llvm-14/lib/libarcher.so \
  TSAN_OPTIONS="ignore_noninstrumented_modules=1 halt_on_error=1 second_deadlock_stack=1" \
  build/test-tsan/tests/dptrain_tests

echo "== 4/4 libFuzzer: corpus replay, then ${FUZZ_SECONDS:-30} s of fuzzing per target, in build/fuzz"
FUZZ_BUILD_DIR=build/fuzz FUZZ_BUILD_JOBS="$jobs" tests/fuzz/run.sh --replay
FUZZ_BUILD_DIR=build/fuzz FUZZ_BUILD_JOBS="$jobs" FUZZ_JOBS="$jobs" tests/fuzz/run.sh "${FUZZ_SECONDS:-30}"

echo "== all tests passed: g++, clang++ with ASan+UBSan, clang++ with TSan+Archer, and the fuzzers"
