"""The ctypes declarations of include/emmy/emmy.h and the search for libemmy.so.

Nothing here is public API; `emmy.library()` returns the loaded CDLL for callers that want
the raw C ABI (the CPU test uses it to check the C side's own argument checks).
"""
import ctypes
import ctypes.util
import os
import threading

# emmy_dtype: (value, name, bytes per element). The values are part of the ABI.
DTYPES = [(0, "bool", 1), (1, "i32", 4), (2, "i64", 8), (3, "f16", 2), (4, "bf16", 2), (5, "f32", 4),
          (6, "f64", 8)]
DTYPE_CODE = {name: code for code, name, _ in DTYPES}
DTYPE_NAME = {code: name for code, name, _ in DTYPES}
DTYPE_SIZE = {name: size for _, name, size in DTYPES}


class Tensor(ctypes.Structure):
    """struct emmy_tensor."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64))]


class Options(ctypes.Structure):
    """struct emmy_options; every field 0/NULL means its default."""
    _fields_ = [("target", ctypes.c_char_p), ("knobs", ctypes.c_char_p), ("schedule", ctypes.c_char_p),
                ("stdlib_path", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p), ("no_cache", ctypes.c_int32),
                ("no_env_knobs", ctypes.c_int32), ("dtype", ctypes.c_char_p), ("no_specialize", ctypes.c_int32)]


_P = ctypes.c_void_p
_I32 = ctypes.c_int32
_SIGNATURES = {
    "emmy_version": (ctypes.c_char_p, []),
    "emmy_last_error": (ctypes.c_char_p, []),
    "emmy_program_from_source": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Options),
                                                ctypes.POINTER(_P)]),
    "emmy_program_from_file": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(Options), ctypes.POINTER(_P)]),
    "emmy_program_free": (None, [_P]),
    "emmy_program_op_count": (_I32, [_P]),
    "emmy_program_op_name": (ctypes.c_char_p, [_P, _I32]),
    "emmy_op_get": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "emmy_op_free": (None, [_P]),
    "emmy_op_num_inputs": (_I32, [_P]),
    "emmy_op_num_outputs": (_I32, [_P]),
    "emmy_op_tensor": (ctypes.c_int, [_P, _I32, _I32, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_I32),
                                      ctypes.POINTER(_I32)]),
    "emmy_op_output_shape": (ctypes.c_int, [_P, ctypes.POINTER(Tensor), _I32, _I32,
                                            ctypes.POINTER(ctypes.c_int64)]),
    "emmy_op_launch": (ctypes.c_int, [_P, ctypes.POINTER(Tensor), _I32, ctypes.POINTER(Tensor), _I32, _P]),
    "emmy_op_run_host": (ctypes.c_int, [_P, ctypes.POINTER(Tensor), _I32, ctypes.POINTER(Tensor), _I32]),
    "emmy_op_cuda": (ctypes.c_char_p, [_P]),
    "emmy_op_knobs": (ctypes.c_char_p, [_P]),
    "emmy_op_prepare": (ctypes.c_int, [_P, ctypes.POINTER(Tensor), _I32]),
    "emmy_op_knobs_at": (ctypes.c_int, [_P, ctypes.POINTER(Tensor), _I32, ctypes.POINTER(ctypes.c_char_p)]),
    "emmy_op_warning_count": (_I32, [_P]),
    "emmy_op_warning": (ctypes.c_char_p, [_P, _I32]),
}


class LibraryNotFoundError(OSError):
    """libemmy.so was not found, or could not be loaded."""


_lock = threading.Lock()
_lib = None
_lib_path = None


def candidates():
    """Where libemmy.so is looked for, in order: $EMMY_LIBRARY alone when it is set; else the
    wheel's own (emmy/lib/libemmy.so) alone when there is one; else the
    build tree (python/emmy -> build/libemmy.so), the installed layout
    (<prefix>/share/emmy/python/emmy -> <prefix>/lib/libemmy.so), then the dynamic loader's
    search path."""
    env = os.environ.get("EMMY_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(here, "lib", "libemmy.so")  # a wheel's (pip install .)
    if os.path.exists(packaged):
        return [packaged]
    root = os.path.dirname(os.path.dirname(here))  # python/emmy -> the source tree's root
    prefix = os.path.dirname(os.path.dirname(root))  # share/emmy/python/emmy -> <prefix>
    found = ctypes.util.find_library("emmy")
    return [os.path.join(root, "build", "libemmy.so"), os.path.join(prefix, "lib", "libemmy.so"),
            os.path.join(prefix, "lib64", "libemmy.so")] + ([found] if found else []) + ["libemmy.so"]


def load(path=None):
    """Loads libemmy (from `path`, else the first of candidates() that loads) once per process
    and declares every function's signature. Returns (CDLL, path)."""
    global _lib, _lib_path
    with _lock:
        if _lib is not None:
            if path is not None and os.path.realpath(path) != os.path.realpath(_lib_path):
                raise LibraryNotFoundError(
                    f"libemmy is already loaded from {_lib_path}; cannot switch to {path} in this process")
            return _lib, _lib_path
        tried = []
        for candidate in ([path] if path is not None else candidates()):
            is_file = os.sep in candidate
            if is_file and not os.path.exists(candidate):
                tried.append(f"{candidate} (no such file)")
                continue
            try:
                lib = ctypes.CDLL(candidate)
            except OSError as e:
                tried.append(f"{candidate} ({e})")
                continue
            missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
            if missing:
                tried.append(f"{candidate} (lacks {', '.join(missing)})")
                continue
            for name, (restype, argtypes) in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.restype = restype
                fn.argtypes = argtypes
            _lib, _lib_path = lib, candidate
            return _lib, _lib_path
        raise LibraryNotFoundError("libemmy.so not found; set EMMY_LIBRARY to its path. Tried:\n  " +
                                   "\n  ".join(tried))


def shape_array(shape):
    """A ctypes int64 array holding `shape` (one element at least, so that rank 0 has a valid pointer)."""
    arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    return arr


def make_tensors(items):
    """An emmy_tensor array from (data pointer or None, dtype name, shape) triples. Returns
    (array, keep-alive list); the shape arrays must outlive the call."""
    arr = (Tensor * max(len(items), 1))()
    keep = []
    for i, (ptr, dtype, shape) in enumerate(items):
        shp = shape_array(shape)
        keep.append(shp)
        arr[i].data = ptr
        arr[i].dtype = DTYPE_CODE[dtype]
        arr[i].rank = len(shape)
        arr[i].shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    return arr, keep
