# expect-exit: 0
# expect-output: chain: SOURCE E004
# expect-output: brackets: SOURCE E004
# expect-output: legal: ok
# reject-output: Segmentation|Aborted|core dumped|Traceback
# Guards against: a Python thread with a small stack (256 KB) compiling deep expressions: emmy.Error, never a dead process.
"$PYTHON" - <<'PY'
import os, threading
import emmy
emmy.load_library(os.environ["EMMY_LIB"])
stdlib = os.environ["EMMY_STDLIB"]

def attempt(label, body):
    src = "op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = " + body + ";\n}\n"
    try:
        prog = emmy.compile(src, name=label + ".emmy", stdlib_path=stdlib, cache=False)
        prog.op("f")
        print(f"{label}: ok", flush=True)
    except emmy.Error as e:
        code = "E004" if "E004" in e.message else e.message[:200]
        print(f"{label}: {e.kind.name} {code}", flush=True)

def work():
    attempt("chain", " + ".join(["x[i]"] * 9000))
    attempt("brackets", "(" * 100000 + "x[i]" + ")" * 100000)
    attempt("legal", "(" * 190 + " * ".join(["x[i]"] * 900) + ")" * 190)

threading.stack_size(256 * 1024)
t = threading.Thread(target=work)
t.start()
t.join()
PY
