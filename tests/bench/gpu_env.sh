# Sourced by the GPU-machine scripts of tests/bench: the repository root as the working folder,
# the carried binaries (B), the output folder (OUT, the device tool's $OUT), the stdlib and a
# kernel cache inside OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=$PWD/gpu-carry
OUT=${OUT:-/tmp/emmy-out}
mkdir -p "$OUT"
export EMMY_STDLIB=$PWD/stdlib EMMY_CACHE_DIR=$OUT/kernel-cache
[ -f "$B/COMMIT" ] && export EMMY_COMMIT="$(cat "$B/COMMIT")"
