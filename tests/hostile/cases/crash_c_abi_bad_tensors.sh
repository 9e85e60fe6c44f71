# expect-exit: 0
# expect-output: null data: 2 .*has 4 elements but its data pointer is NULL
# expect-output: rank 2\^28: 2 .*has rank 1; the tensor given has rank 268435456
# expect-output: negative: 2 .*negative extent
# expect-output: null output: 2 .*output 0 has 4 elements but its data pointer is NULL
# reject-output: Segmentation|Aborted|core dumped|Traceback
# Guards against: the C ABI reading through data=NULL and past a shape array shorter than rank (segfaults).
"$PYTHON" - <<'PY'
import ctypes, os
import emmy
from emmy import _ffi
emmy.load_library(os.environ["EMMY_LIB"])
lib = emmy.library()
prog = emmy.compile("op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] * 2.0; }", stdlib_path=os.environ["EMMY_STDLIB"],
                    cache=False)
op = prog.op("f")
shape = (ctypes.c_int64 * 1)(4)
buf = (ctypes.c_float * 4)()
F32 = 5

def tensor(data, rank, shp):
    t = _ffi.Tensor()
    t.data, t.dtype, t.rank, t.shape = data, F32, rank, ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    return t

def call(label, inp, out):
    status = lib.emmy_op_run_host(op._handle, ctypes.byref(inp), 1, ctypes.byref(out), 1)
    print(f"{label}: {status} {lib.emmy_last_error().decode()}", flush=True)

good = lambda: tensor(ctypes.cast(buf, ctypes.c_void_p), 1, shape)
call("null data", tensor(None, 1, shape), good())
call("rank 2^28", tensor(ctypes.cast(buf, ctypes.c_void_p), 1 << 28, shape), good())
call("negative", tensor(ctypes.cast(buf, ctypes.c_void_p), 1, (ctypes.c_int64 * 1)(-4)), good())
call("null output", good(), tensor(None, 1, shape))
PY
