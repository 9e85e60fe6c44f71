#!/usr/bin/env bash
# The project's C++ sources are formatted by .clang-format: clang-format would change no file.
# Lists the files it would change and exits 1; `clang-format -i FILE` formats one.
# Usage: tests/format/check_format.sh [CLANG_FORMAT]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tool="${1:-clang-format-14}"
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'include/*.h' 'include/*.hpp' \
                                    'examples/*.cpp' 'examples/*.c')
else  # a tree without its git history: the same folders and suffixes
  mapfile -t files < <(find src tests include examples -name Output -prune -o -type f \
                         \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' \) -print | sort)
fi
bad=0
for f in "${files[@]}"; do
  if ! "$tool" --style=file "$f" | cmp -s "$f" -; then
    echo "$f: not formatted (run: $tool -i $f)"
    bad=1
  fi
done
echo "${#files[@]} files checked"
exit "$bad"
