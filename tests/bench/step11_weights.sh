#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call (~300 s): why layernorm and rmsnorm
# at (8192, 50257) trail the copy ceiling. rows_weights_probe.py times the emitted kernels as
# emitted and edited (the store's memory clobber, the peeled path's weight reads hoisted and
# funnel-shifted) at C = 50256 and 50257; ncu_rows_memory.sh profiles the three row ops at both;
# the SASS of the emitted and hoisted kernels for reading. Writes $OUT/weights_probe.txt,
# $OUT/ncu_50256.txt, $OUT/ncu_50257.txt, $OUT/sass.tar.gz.
source "$(dirname "$0")/gpu_env.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout ${PROBE_SECONDS:-150} python3 tests/bench/rows_weights_probe.py --emmyc "$B/emmyc" > "$OUT/weights_probe.txt" 2>&1
grep -v Warning "$OUT/weights_probe.txt"
for c in 50256 50257; do
  timeout ${NCU_SECONDS:-120} bash tests/bench/ncu_rows_memory.sh N=8192,C=$c f16 > "$OUT/ncu_$c.txt" 2>&1
  grep -E "==|gpu__time|inst_executed|requests|long_scoreboard" "$OUT/ncu_$c.txt" | head -40
done
mkdir -p /tmp/sass && cd /tmp/sass
for op in layernorm rmsnorm; do
  for c in 50256 50257; do
    "$B/emmyc" compile "$OLDPWD/stdlib/nn.emmy" --op $op --target sm_90a --ir cuda --shape N=8192,C=$c --specialize > ${op}_$c.cu 2>/dev/null
  done
done
python3 -c "
import sys; sys.path.insert(0, '$OLDPWD/tests/bench')
import rows_weights_probe as p, pathlib
for op in ('layernorm', 'rmsnorm'):
    h = p.hoisted(pathlib.Path(f'{op}_50257.cu').read_text())
    if h:  # (None on the unswitched loops Emmy emits since dc8f041)
        pathlib.Path(f'{op}_50257_hoisted.cu').write_text(h)
"
for f in *.cu; do nvcc -arch=sm_90a -cubin -std=c++17 -Xptxas -v -o ${f%.cu}.cubin $f > ${f%.cu}.ptxas 2>&1; cuobjdump -sass ${f%.cu}.cubin > ${f%.cu}.sass; done
grep -H "registers" *.ptxas
tar czf "$OUT/sass.tar.gz" *.cu *.sass *.ptxas
