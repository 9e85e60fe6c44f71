# expect-exit: 0
# expect-output: out pair: \[2\.0, 4\.0, 6\.0\]
# reject-output: Segmentation|Aborted|core dumped|Traceback
# Guards against: run_host(out=(buffer, shape)) read as two outputs (an op with one output refused it).
"$PYTHON" - <<'PY'
import array, os
import emmy
emmy.load_library(os.environ["EMMY_LIB"])
prog = emmy.compile("op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] * 2.0; }", stdlib_path=os.environ["EMMY_STDLIB"],
                    cache=False)
x = array.array("f", [1, 2, 3])
y = array.array("f", [0, 0, 0])
prog.op("f").run_host((x, (3,)), out=(y, (3,)))
print("out pair:", list(y))
PY
