#!/usr/bin/env bash
# Installs zkr from BUILD_DIR into a fresh prefix, then builds this consumer against it twice:
# with CMake's find_package (shared and static, and the Catch2 tests with zkr::testing) and with
# pkg-config. Prints the programs: each consumer takes HOST:PORT; the test program takes nothing.
# Usage: build.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"
cmake --install "$build" --prefix "$out/prefix" >/dev/null
cmake -S "$here" -B "$out/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$out/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out/cmake" >/dev/null
export PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
# No rpath of our own: the .pc file's Libs carry it, so the program runs from this prefix.
g++ -std=c++20 "$here/consumer.cpp" -o "$out/consumer_pkgconfig" $(pkg-config --cflags --libs zkr)
echo "$out/cmake/consumer $out/cmake/consumer_static $out/consumer_pkgconfig $out/cmake/testing_example"
