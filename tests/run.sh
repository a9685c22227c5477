#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages dptrain's tests need, then builds and runs every test with
# g++ and with clang++ (libomp). This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# dataset-fashion-mnist: the real-data smoke test (skipped, with a message, without it).
packages=(cmake ninja-build g++ clang libomp-14-dev libeigen3-dev catch2 libbenchmark-dev libcli11-dev zlib1g-dev
  dataset-fashion-mnist)
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi

for cxx in g++ clang++; do
  build="build/test-$cxx"
  echo "== $cxx: configure, build, test in $build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
    -DDPTRAIN_BUILD_EXAMPLES=ON -DDPTRAIN_BUILD_BENCHMARKS=OFF
  cmake --build "$build"
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
done
echo "== all tests passed with g++ and clang++"
