# expect-exit: 0
# expect-output: masked rows: 0 wrong of 9
# reject-output: Segmentation|Aborted|core dumped|Traceback|WRONG
# Guards against (items 1 and 8): a row that starts with -inf made the online softmax's fold
# exp(-inf - -inf) = NaN (logsumexp([-inf, 0, 0, 0]) was nan, not log 3), and max/min/argmax/relu
# dropped NaN where PyTorch propagates it. On the CPU interpreter, against PyTorch's values.
"$PYTHON" - <<'PY'
import math, os
import emmy
emmy.load_library(os.environ["EMMY_LIB"])
inf, nan = float("inf"), float("nan")
rows = [[-inf, 0, 0, 0], [0, 0, 0, -inf], [-inf, -inf, 1, 1], [-inf] * 4, [1, nan, 0, 2]]
flat = [v for r in rows for v in r]
x = emmy.HostTensor.from_values(flat, (5, 4), "f32")
ln3, ln2p1 = math.log(3), 1 + math.log(2)
cases = []  # (what, got, want)
nn = emmy.load(os.path.join(os.environ["EMMY_SRC"], "stdlib", "nn.emmy"), dtype="f32", cache=False)
for name in ("logsumexp", "logsumexp_online"):
    got = nn.op(name).run_host(x).values()
    cases.append((name, got, [ln3, ln3, ln2p1, -inf, nan]))
sm = nn.op("softmax").run_host(x).values()
cases.append(("softmax row 0", sm[0:4], [0, 1 / 3, 1 / 3, 1 / 3]))
cases.append(("softmax row 3 (all -inf)", sm[12:16], [nan] * 4))
cases.append(("softmax row 4 (NaN)", sm[16:20], [nan] * 4))
src = """import std.monoids;
op rowmax(x: f32[N, C]) -> (y: f32[N]) { y[n] = max(c: x[n, c]); }
op rowmin(x: f32[N, C]) -> (y: f32[N]) { y[n] = min(c: x[n, c]); }
op relu(x: f32[N, C]) -> (y: f32[N, C]) { y[n, c] = max(x[n, c], 0.0); }
op rowargmax(x: f32[N, C]) -> (y: i64[N]) { y[n] = argmax(c: x[n, c]); }
"""
p = emmy.compile(src, stdlib_path=os.environ["EMMY_STDLIB"], cache=False)
cases.append(("max", p.op("rowmax").run_host(x).values(), [0, 0, 1, -inf, nan]))
cases.append(("min", p.op("rowmin").run_host(x).values(), [-inf, -inf, -inf, -inf, nan]))
cases.append(("relu row 4", p.op("relu").run_host(x).values()[16:20], [1, nan, 0, 2]))
cases.append(("argmax", p.op("rowargmax").run_host(x).values(), [1, 0, 2, 0, 1]))
wrong = 0
for what, got, want in cases:
    for g, w in zip(got, want):
        same = (math.isnan(g) and math.isnan(w)) or g == w or (math.isfinite(w) and abs(g - w) <= 1e-5 * max(1, abs(w)))
        if not same:
            wrong += 1
            print(f"WRONG {what}: got {got}, want {want}")
            break
print(f"masked rows: {wrong} wrong of {len(cases)}")
PY
