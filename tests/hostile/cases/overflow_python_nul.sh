# expect-exit: 0
# expect-output: SOURCE nul\.emmy:2:11: error: the source holds a NUL byte
# reject-output: Segmentation|Aborted|core dumped|Traceback|compiled
# Guards against: emmy.compile dropping everything after a NUL byte (the C string ends there: a truncated op compiled).
"$PYTHON" - <<'PY'
import os
import emmy
emmy.load_library(os.environ["EMMY_LIB"])
src = "op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x\0[i] * 2.0;\n}\nop g(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }\n"
try:
    emmy.compile(src, name="nul.emmy", stdlib_path=os.environ["EMMY_STDLIB"], cache=False)
    print("compiled")
except emmy.Error as e:
    print(e.kind.name, e.message)
PY
