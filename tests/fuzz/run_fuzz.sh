#!/usr/bin/env bash
# Builds the libFuzzer target with clang (ASan + UBSan) in build-fuzz/ and runs it for
# SECONDS (default 60) over a seed corpus of every .emmy file in the repository, with the
# dictionary of the language's words (tests/fuzz/emmy.dict, from make_dict.py) and inputs up
# to 64 KiB. The build is -O1 with line tables (the sanitizers' stack traces), not -O2 -g:
# in ctest the smoke run is mostly this build, and at -O2 -g it took CI's two cores past the
# test's 20 minutes (2026-12-03; -O0 builds faster but runs the seed corpus eight times
# slower). EMMY_FUZZ_CXX_FLAGS overrides the flags.
# Usage: tests/fuzz/run_fuzz.sh [SECONDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-60}"
build="$root/build-fuzz"
flags="${EMMY_FUZZ_CXX_FLAGS:--O1 -gline-tables-only}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
# Configured every run (a no-op when nothing changed) so that changed flags take effect.
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$flags" \
  -DEMMY_FUZZ=ON "${launcher[@]}" >/dev/null
cmake --build "$build" --target emmy_fuzz > "$build/build.log" 2>&1 || { cat "$build/build.log"; exit 1; }
corpus="$build/corpus"
mkdir -p "$corpus"
# (lit's Output/ folders are left out: they hold the tests' scratch files, symlink loops among them.)
find "$root/stdlib" "$root/examples" "$root/tests/lit" -name Output -prune -o -name '*.emmy' -type f -exec cp {} "$corpus/" \;
cp "$root"/tests/fuzz/regressions/* "$corpus/"  # inputs that once crashed
cd "$build"
"$build/tests/emmy_fuzz" -max_total_time="$seconds" -timeout=120 -rss_limit_mb=2048 -max_len=65536 \
  -dict="$root/tests/fuzz/emmy.dict" \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 25
