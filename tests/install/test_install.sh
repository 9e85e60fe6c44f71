#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then use what it installed as a user would:
# the files are there, libemmy.so needs no third-party shared libraries, the installed emmyc
# finds the installed stdlib, and examples/embed builds against the CMake package (with the
# main build's generator and compiler) and runs ("ok" from the interpreter; no GPU needed).
#
#   tests/install/test_install.sh <build dir> <source dir>
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/emmy-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

unset EMMY_STDLIB EMMY_KNOBS EMMY_LIBRARY
export EMMY_CACHE_DIR=$tmp/cache

step "cmake --install $build --prefix <tmp>"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }

step "installed files"
for f in bin/emmyc lib/libemmy.so include/emmy/emmy.hpp include/emmy/emmy.h include/emmy/version.hpp \
         share/emmy/stdlib/monoids.emmy share/emmy/stdlib/nn.emmy share/emmy/stdlib/linalg.emmy \
         lib/cmake/emmy/emmyConfig.cmake lib/cmake/emmy/emmyConfigVersion.cmake lib/cmake/emmy/emmyTargets.cmake; do
  [ -e "$prefix/$f" ] || fail "missing $f"
done
[ -x "$prefix/bin/emmyc" ] || fail "bin/emmyc is not executable"
soname=$(objdump -p "$prefix/lib/libemmy.so" | awk '/SONAME/ {print $2}')
{ [ -n "$soname" ] && [ -e "$prefix/lib/$soname" ]; } || fail "libemmy.so: SONAME '$soname' not installed"
echo "libemmy.so -> $(readlink "$prefix/lib/libemmy.so"), SONAME $soname"

step "the exported targets name no internal target"
if grep -nE 'emmy_(support|schedule|syntax|parser|sema|algebra|ir|lower|codegen|runtime|interp|gpu|driver)\b|antlr4|fmt::|CLI11' \
     "$prefix"/lib/cmake/emmy/*.cmake; then
  fail "the CMake package refers to build-tree targets"
fi
grep -q "$build" "$prefix"/lib/cmake/emmy/*.cmake && fail "the CMake package refers to the build dir"

step "ldd libemmy.so: system libraries, and the rest from <prefix>/lib"
# fmt is header-only and Emmy's layers are linked in; a third-party shared library libemmy
# needs (the ANTLR runtime) must be installed beside it and found there through its RUNPATH.
ldd "$prefix/lib/libemmy.so" | sed 's/^/  /'
ldd "$prefix/lib/libemmy.so" | grep -q 'not found' && fail "libemmy.so: unresolved dependency"
system='^(linux-vdso\.so|/lib.*/ld-linux.*\.so|libc\.so|libm\.so|libstdc\+\+\.so|libgcc_s\.so|libdl\.so|libpthread\.so|librt\.so|libuuid\.so)'
while read -r name _ path _; do
  [[ $name =~ $system ]] && continue
  case $path in
    "$prefix/lib/"*) ;;
    *) fail "libemmy.so: $name resolves to '$path', not into <prefix>/lib" ;;
  esac
done < <(ldd "$prefix/lib/libemmy.so")

# From outside the source tree, with EMMY_STDLIB unset. emmyc's last resort is the source tree's
# stdlib/, so a probe module that only the installed stdlib has proves the installed one is read.
work=$tmp/work
mkdir -p "$work"
cd "$work"
step "installed emmyc check <prefix>/share/emmy/stdlib/nn.emmy"
"$prefix/bin/emmyc" --version
"$prefix/bin/emmyc" check "$prefix/share/emmy/stdlib/nn.emmy" || fail "emmyc check nn.emmy"
cat > "$prefix/share/emmy/stdlib/install_probe.emmy" <<'EMMY'
op install_probe(x: f32[N]) -> (y: f32[N]) {
  y[n] = x[n] * 2;
}
EMMY
cat > probe.emmy <<'EMMY'
import std.install_probe;

op probe(x: f32[N]) -> (y: f32[N]) {
  y[n] = install_probe(x)[n];
}
EMMY
step "installed emmyc imports a module only <prefix>/share/emmy/stdlib has"
"$prefix/bin/emmyc" check probe.emmy || fail "the installed emmyc does not read <prefix>/share/emmy/stdlib"
rm "$prefix/share/emmy/stdlib/install_probe.emmy"

if [ -f "$src/python/emmy/__init__.py" ] && command -v python3 > /dev/null; then
  step "the installed Python module loads the installed libemmy"
  [ -f "$prefix/share/emmy/python/emmy/__init__.py" ] || fail "missing share/emmy/python/emmy/__init__.py"
  [ -z "$(find "$prefix/share/emmy/python" -name __pycache__ -o -name '*.pyc')" ] || fail "bytecode caches installed"
  PYTHONPATH="$prefix/share/emmy/python" EMMY_PREFIX="$prefix" python3 -B - <<'PY' || fail "import emmy from <prefix>"
import os, emmy
lib = os.path.realpath(emmy.load_library())
want = os.path.realpath(os.path.join(os.environ["EMMY_PREFIX"], "lib"))
assert os.path.dirname(lib) == want, f"libemmy loaded from {lib}, not {want}"
program = emmy.compile("import std.nn;\n\nop row_softmax(x: f16[N, C]) -> (y: f16[N, C]) {\n  y[n, c] = softmax(x)[n, c];\n}\n")
assert program.ops == ["row_softmax"], program.ops
print(f"emmy {emmy.version()} from {lib}: ops {program.ops}")
PY
fi

step "examples/embed against the installed package"
cache=$build/CMakeCache.txt
cache_get() { sed -n "s/^$1:[A-Z]*=//p" "$cache" | head -n 1; }
generator=$(cache_get CMAKE_GENERATOR)
cxx=$(cache_get CMAKE_CXX_COMPILER)
make_program=$(cache_get CMAKE_MAKE_PROGRAM)
args=(-S "$src/examples/embed" -B "$tmp/embed" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release)
[ -n "$generator" ] && args+=(-G "$generator")
[ -n "$cxx" ] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
[ -n "$make_program" ] && args+=(-DCMAKE_MAKE_PROGRAM="$make_program")
echo "generator '$generator', compiler '$cxx'"
cmake "${args[@]}" > "$tmp/embed-configure.log" 2>&1 || { cat "$tmp/embed-configure.log"; fail "configure examples/embed"; }
grep -q "emmy_DIR.*$prefix" "$tmp/embed/CMakeCache.txt" || fail "examples/embed did not find the package in the prefix"
cmake --build "$tmp/embed" > "$tmp/embed-build.log" 2>&1 || { cat "$tmp/embed-build.log"; fail "build examples/embed"; }
if grep -q 'warning:' "$tmp/embed-build.log"; then cat "$tmp/embed-build.log"; fail "examples/embed builds with warnings"; fi

step "run examples/embed"
rc=0
out=$("$tmp/embed/embed") || rc=$?
echo "$out" | sed 's/^/  /'
[ "$rc" = 0 ] || fail "examples/embed exited with $rc"
[ "$(echo "$out" | tail -n 1)" = "ok" ] || fail "examples/embed did not print ok"

echo "install_package: ok"
