#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, as a user would (the in-tree backend builds
# libemmy with CMake into the given build dir, already built under ctest), then, with no EMMY_*
# variable and no PYTHONPATH, from outside the source tree: `import emmy` loads the wheel's own
# libemmy and stdlib, a user file importing std.nn checks, and every CPU example of
# docs/embedding.md (its ```python example blocks) runs.
#
#   tests/python/test_wheel.sh <build dir> <source dir>
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/emmy-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset EMMY_STDLIB EMMY_LIBRARY EMMY_KNOBS PYTHONPATH
export EMMY_CACHE_DIR=$tmp/cache

echo "== python3 -m venv; pip install $src"
if ! python3 -m venv "$tmp/venv" > "$tmp/venv.log" 2>&1; then
  echo "python_wheel: skipped: python3 -m venv does not work here ($(tail -1 "$tmp/venv.log"))"
  exit 77
fi
(cd "$src" && EMMY_BUILD_DIR="$build" "$tmp/venv/bin/pip" install --no-index --disable-pip-version-check -q . ) \
  > "$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install ."; }
py=$tmp/venv/bin/python
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')

echo "== import emmy: the wheel's module, libemmy and stdlib"
cd "$tmp"
"$py" - "$site" <<'PY' || fail "import emmy"
import os, sys
import emmy
from emmy import _ffi
site = sys.argv[1]
lib, path = _ffi.load()
assert emmy.__file__.startswith(site), emmy.__file__
assert path == os.path.join(site, "emmy", "lib", "libemmy.so"), path
with open("mine.emmy", "w") as f:
    f.write("import std.nn;\n\nop probs(x: f16[N, C]) -> (y: f16[N, C]) {\n  y[n, c] = softmax(x)[n, c];\n}\n")
op = emmy.load("mine.emmy", dtype="f32").op("probs")
x = emmy.HostTensor.from_values([0.0, 1.0, 2.0, 3.0], (2, 2), "f32")
y = op.run_host(x).values()
assert abs(y[0] + y[1] - 1) < 1e-6 and abs(y[3] / y[2] - 2.718281828) < 1e-5, y
print(f"emmy {emmy.__file__}, libemmy {path}: ok")
PY

echo "== docs/embedding.md's python examples, with the wheel"
"$py" - "$src/docs/embedding.md" "$tmp/examples" <<'PY' || fail "extracting the examples"
import os, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"```python example\n(.*?)```", text, re.S)
assert blocks, "no ```python example block in docs/embedding.md"
os.makedirs(sys.argv[2])
for i, b in enumerate(blocks):
    open(os.path.join(sys.argv[2], f"example_{i}.py"), "w").write(b)
print(f"{len(blocks)} example(s)")
PY
cd "$src"  # the examples name stdlib/ files from the source root, as the doc runs them
for f in "$tmp"/examples/*.py; do
  "$py" "$f" > "$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; fail "$(basename "$f")"; }
  tail -1 "$tmp/out.txt"
done
echo "wheel: ok"
