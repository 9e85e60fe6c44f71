"""Emmy from Python: a thin ctypes layer over libemmy's C ABI (include/emmy/emmy.h).

    import emmy, torch
    prog = emmy.load("stdlib/nn.emmy")                 # parse and check (diagnostics -> emmy.Error)
    sdpa = prog.op("sdpa")                              # lowered with the op's schedule block
    o = sdpa(q, k, v)                                   # torch CUDA tensors in, a new tensor out
    sdpa(q, k, v, out=o)                                # or into a preallocated output
    fa1 = emmy.load("stdlib/nn.emmy", schedule="fa1-scalar").op("sdpa")

    # The CPU interpreter, with no GPU, numpy or torch:
    x = emmy.HostTensor.from_values([0.5, -1.0, 2.0, 0.25], (2, 2), "f16")
    y = prog.op("softmax").run_host(x)                  # a HostTensor; y.values() -> floats

Nothing is imported beyond the standard library: torch and numpy objects are recognized when
the caller has imported those modules. The library is found through $EMMY_LIBRARY, else next
to the package (the build tree's build/libemmy.so, or <prefix>/lib/libemmy.so when installed
under <prefix>/share/emmy/python), else the dynamic loader's path; `emmy.load_library(path)`
picks one explicitly before first use.

Every failing C call raises emmy.Error, whose `kind` is an ErrorKind (the C emmy_status) and
whose message is emmy_last_error(): for a program that does not check, the diagnostics with
file:line:col and a caret. Arguments the Python layer rejects itself (a tensor on the wrong
device, not contiguous, a buffer of the wrong size) raise emmy.Error with kind ARGUMENT too.
"""
import array
import collections
import ctypes
import enum
import os
import sys
import warnings

from . import _ffi, _half
from ._ffi import LibraryNotFoundError

__all__ = ["Error", "EmmyWarning", "ErrorKind", "LibraryNotFoundError", "Program", "Op", "TensorSpec", "HostTensor", "Launch",
           "load", "compile", "load_library", "library", "version", "DTYPES", "dtype_size", "f16_bits", "f16_value",
           "bf16_bits", "bf16_value", "round_to"]

#: Element type names, in the order of the C ABI's emmy_dtype values.
DTYPES = tuple(name for _, name, _ in _ffi.DTYPES)


def dtype_size(dtype):
    """Bytes per element of an Emmy dtype name ("f16" -> 2; "bool" -> 1)."""
    return _ffi.DTYPE_SIZE[dtype]


class ErrorKind(enum.IntEnum):
    """Why a call failed: the C ABI's emmy_status."""
    SOURCE = 1    # the program does not parse or check; the message holds the diagnostics
    ARGUMENT = 2  # a bad argument: unknown op, wrong tensor count, shape or dtype
    COMPILE = 3   # lowering or NVRTC failed
    DEVICE = 4    # no CUDA driver or device, or a driver call failed
    INTERNAL = 5  # a compiler bug
    RESOURCE = 6  # out of memory, a file that cannot be read or written, another limit of the machine


class EmmyWarning(UserWarning):
    """A warning of Emmy's lowering: a knob that has no effect, a fallback taken."""


class Error(Exception):
    """A failed Emmy call. `kind` is an ErrorKind, `message` the C library's (or the Python
    layer's) message; str(error) is the message."""

    def __init__(self, kind, message):
        try:
            kind = ErrorKind(kind)
        except ValueError:
            kind = int(kind)
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __repr__(self):
        name = self.kind.name if isinstance(self.kind, ErrorKind) else str(self.kind)
        return f"emmy.Error({name}, {self.message!r})"


def load_library(path=None):
    """Loads libemmy now (from `path`, else the default search) and returns the path it was
    loaded from. Only one library per process: a second, different path raises
    LibraryNotFoundError."""
    return _ffi.load(path)[1]


def library():
    """The ctypes CDLL of libemmy, every function of emmy.h declared (for raw C ABI calls)."""
    return _ffi.load()[0]


def _lib():
    return _ffi._lib if _ffi._lib is not None else _ffi.load()[0]


def version():
    """libemmy's version string."""
    return _lib().emmy_version().decode()


def _check(status):
    if status != 0:
        raise Error(status, (_lib().emmy_last_error() or b"").decode("utf-8", "replace"))


def _arg_error(message):
    return Error(ErrorKind.ARGUMENT, message)


def _knob_string(knobs):
    if knobs is None or isinstance(knobs, str):
        return knobs
    if isinstance(knobs, dict):
        return ",".join(f"{k}={v}" for k, v in knobs.items())
    return ",".join(knobs)


def _default_stdlib():
    # The stdlib inside the package (a wheel), else beside it: python/emmy -> stdlib/ in the
    # source tree, and share/emmy/python/emmy -> share/emmy/stdlib when installed: ../../stdlib.
    if os.environ.get("EMMY_STDLIB"):
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.isdir(os.path.join(here, "stdlib")):  # a wheel's (pip install .)
        return os.path.join(here, "stdlib")
    path = os.path.join(os.path.dirname(os.path.dirname(here)), "stdlib")
    return path if os.path.isdir(path) else None


# ---- programs and ops ---------------------------------------------------------------------


def load(path, target=None, knobs=None, schedule=None, cache=True, stdlib_path=None, cache_dir=None,
         env_knobs=True, dtype=None, specialize=True):
    """Parses and checks the .emmy file at `path` (with its imports) and returns a Program.

    target: "sm_80", "sm_90", "sm_90a" or "sm_120" (None: the one the GPU runs best, sm_90a on an
        H100/H200, whose ops without an sm_90a schedule use their sm_90 one; else sm_90).
    knobs: a knob list ("PLACE=fuse,TILE@e=f64"), a dict {"TILE@e": "f64"} or a list of
        "KNOB=VALUE" strings; it overrides the schedule block and $EMMY_KNOBS.
    schedule: the name of a named schedule block ("fa1-scalar"), for every op taken from
        this program (None: the unnamed block).
    cache: False neither reads nor writes the on-disk kernel cache; cache_dir picks it.
    stdlib_path: directories of std.* (a string with ':' or a list); None: $EMMY_STDLIB,
        else the stdlib beside this package, else the library's installed one.
    env_knobs: False ignores $EMMY_KNOBS.
    dtype: "f16", "bf16" or "f32": the 16-bit float tensors of every op signature are read as
        this dtype; "f64": every float of the program (f32 tensors, casts, monoid fields), for gradient checks
        (None: as declared).
    specialize: False runs the shape-generic kernels; by default each run's kernels are
        specialized to its size class (docs/running.md), as $EMMY_SPECIALIZE=0 turns off too.
    """
    return Program(_Source(path=os.fspath(path)), target, knobs, schedule, cache, stdlib_path, cache_dir, env_knobs,
                   dtype, specialize)


def compile(source, name="<source>", target=None, knobs=None, schedule=None, cache=True, stdlib_path=None,
            cache_dir=None, env_knobs=True, dtype=None, specialize=True):
    """Like load(), for .emmy source text; `name` is the file name diagnostics show."""
    return Program(_Source(text=source, name=name), target, knobs, schedule, cache, stdlib_path, cache_dir,
                   env_knobs, dtype, specialize)


class _Source:
    def __init__(self, path=None, text=None, name=None):
        self.path, self.text, self.name = path, text, name if path is None else path


def _nul_message(name, text):
    at = text.index(b"\0")
    line = text.count(b"\n", 0, at) + 1
    column = at - (text.rfind(b"\n", 0, at) + 1) + 1
    return (f"{name}:{line}:{column}: error: the source holds a NUL byte (U+0000), which no .emmy source "
            f"may contain\n  help: remove it (a file read in binary mode, or a C string's terminator copied in?)")


class Program:
    """A checked .emmy source with its imports. `ops` lists the ops it defines; `op(name)`
    lowers one (cached per name). Create with emmy.load() or emmy.compile()."""

    def __init__(self, source, target=None, knobs=None, schedule=None, cache=True, stdlib_path=None,
                 cache_dir=None, env_knobs=True, dtype=None, specialize=True):
        lib = _lib()
        if stdlib_path is None:
            stdlib_path = _default_stdlib()
        elif not isinstance(stdlib_path, str):
            stdlib_path = ":".join(os.fspath(p) for p in stdlib_path)
        self.name = source.name
        self._source = source  # emmy.torch derives a backward from it
        self.options = {"target": target, "knobs": _knob_string(knobs), "schedule": schedule, "cache": bool(cache),
                        "stdlib_path": stdlib_path, "cache_dir": cache_dir, "env_knobs": bool(env_knobs), "dtype": dtype,
                        "specialize": bool(specialize)}
        enc = lambda s: None if s is None else os.fspath(s).encode()
        opts = _ffi.Options(enc(target), enc(self.options["knobs"]), enc(schedule), enc(stdlib_path), enc(cache_dir),
                            0 if cache else 1, 0 if env_knobs else 1, enc(dtype), 0 if specialize else 1)
        handle = ctypes.c_void_p()
        if source.path is not None:
            _check(lib.emmy_program_from_file(source.path.encode(), ctypes.byref(opts), ctypes.byref(handle)))
        else:
            text = source.text.encode()
            if b"\0" in text:  # the C ABI takes a NUL-terminated string: the rest would be dropped
                raise Error(ErrorKind.SOURCE, _nul_message(source.name, text))
            _check(lib.emmy_program_from_source(text, source.name.encode(), ctypes.byref(opts), ctypes.byref(handle)))
        self._handle = handle
        self._free = _finalizer(self, lib.emmy_program_free, handle)
        count = lib.emmy_program_op_count(handle)
        self.ops = [lib.emmy_program_op_name(handle, i).decode() for i in range(count)]
        self._ops = {}

    def op(self, name):
        """The op `name`, lowered with this program's target, knobs and schedule (emmy.Error
        ARGUMENT for an unknown name; COMPILE when lowering fails). The lowering's warnings
        (knobs without effect, fallbacks) go to Python's warnings module as EmmyWarning."""
        if name not in self._ops:
            handle = ctypes.c_void_p()
            _check(_lib().emmy_op_get(self._handle, name.encode(), ctypes.byref(handle)))
            self._ops[name] = Op(self, handle, name)
            for text in self._ops[name].warnings:
                warnings.warn(f"{name}: {text}", EmmyWarning, stacklevel=2)
        return self._ops[name]

    def __repr__(self):
        return f"<emmy.Program {self.name} ops={self.ops}>"


def _finalizer(owner, free, handle):
    import weakref
    f = weakref.finalize(owner, free, handle)
    f.atexit = False  # at exit the CUDA context may be gone; the OS reclaims everything
    return f


TensorSpec = collections.namedtuple("TensorSpec", "name dtype rank")
TensorSpec.__doc__ = "A parameter or output of an op: its name, dtype name (\"f16\") and rank."


class Op:
    """One lowered op of a Program.

    inputs / outputs: lists of TensorSpec(name, dtype, rank). knobs: the knobs it was lowered
    with; cuda: the generated CUDA C++. Call it on torch CUDA tensors (`op(q, k, v)`), bind it
    for repeated launches (`op.bind(...)`), or run it on the CPU interpreter (`op.run_host`).
    """

    def __init__(self, program, handle, name):
        lib = _lib()
        self.program = program  # keeps the program alive while the op is
        self.name = name
        self._handle = handle
        self._free = _finalizer(self, lib.emmy_op_free, handle)
        self.inputs = [self._spec(0, i) for i in range(lib.emmy_op_num_inputs(handle))]
        self.outputs = [self._spec(1, i) for i in range(lib.emmy_op_num_outputs(handle))]
        self._cuda = None
        self._warned = lib.emmy_op_warning_count(handle)  # Program.op warned of these

    def _spec(self, is_output, index):
        name, dtype, rank = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_int32()
        _check(_lib().emmy_op_tensor(self._handle, is_output, index, ctypes.byref(name), ctypes.byref(dtype),
                                     ctypes.byref(rank)))
        return TensorSpec(name.value.decode(), _ffi.DTYPE_NAME.get(dtype.value, str(dtype.value)), rank.value)

    @property
    def knobs(self):
        """The knobs the op was lowered with (after the schedule block, $EMMY_KNOBS, knobs=)."""
        return (_lib().emmy_op_knobs(self._handle) or b"").decode()

    def knobs_at(self, *shapes):
        """The knobs a run on inputs of these shapes (tuples) takes: the first guarded schedule
        block whose guard holds and whose kernels serve the sizes, else the unguarded one."""
        self._count(shapes)
        arr, keep = _ffi.make_tensors([(None, s.dtype, tuple(shape)) for s, shape in zip(self.inputs, shapes)])
        text = ctypes.c_char_p()
        _check(_lib().emmy_op_knobs_at(self._handle, arr, len(shapes), ctypes.byref(text)))
        self._warn_new()
        return (text.value or b"").decode()

    @property
    def warnings(self):
        """Knobs that had no effect, fallbacks taken, a kernel cache that could not be written."""
        lib = _lib()
        return [lib.emmy_op_warning(self._handle, i).decode() for i in range(lib.emmy_op_warning_count(self._handle))]

    @property
    def cuda(self):
        """The generated CUDA C++ of every kernel of the op."""
        if self._cuda is None:
            self._cuda = (_lib().emmy_op_cuda(self._handle) or b"").decode()
        return self._cuda

    def __repr__(self):
        sig = lambda specs: ", ".join(f"{s.name}: {s.dtype}/{s.rank}" for s in specs)
        return f"<emmy.Op {self.name}({sig(self.inputs)}) -> ({sig(self.outputs)}) knobs={self.knobs!r}>"

    def _count(self, inputs):
        if len(inputs) != len(self.inputs):
            names = ", ".join(s.name for s in self.inputs)
            raise _arg_error(f"{self.name} takes {len(self.inputs)} input tensor(s) ({names}), got {len(inputs)}")

    def output_shapes(self, *shapes):
        """The shapes (tuples) of the op's outputs for inputs of these shapes."""
        self._count(shapes)
        return self._output_shapes([(None, s.dtype, tuple(shape)) for s, shape in zip(self.inputs, shapes)])

    def _output_shapes(self, items):
        arr, keep = _ffi.make_tensors(items)
        shapes = []
        for index, spec in enumerate(self.outputs):
            out = _ffi.shape_array([0] * spec.rank)
            _check(_lib().emmy_op_output_shape(self._handle, arr, len(items), index, out))
            shapes.append(tuple(out[i] for i in range(spec.rank)))
        return shapes

    # ---- the GPU: torch CUDA tensors --------------------------------------------------

    def __call__(self, *inputs, out=None, stream=None):
        """Launches the op on torch CUDA tensors (contiguous, of the declared dtypes, on one
        device) on `stream` (a torch.cuda.Stream or a raw CUstream handle; None: the device's
        current torch stream), without synchronizing. Outputs are allocated with torch.empty
        unless `out` gives them (a tensor, or a sequence, one per output). Returns the output
        tensor, or a tuple when the op has several. Compiles on the first launch."""
        result = self.bind(*inputs, out=out, stream=stream)()
        self._warn_new()
        return result

    def _warn_new(self):
        """A run may pass over a schedule block that cannot serve its sizes (W056): said once."""
        lib = _lib()
        count = lib.emmy_op_warning_count(self._handle)
        for i in range(self._warned, count):
            warnings.warn(f"{self.name}: {lib.emmy_op_warning(self._handle, i).decode()}", EmmyWarning, stacklevel=3)
        self._warned = max(self._warned, count)

    def bind(self, *inputs, out=None, stream=None):
        """Checks the tensors, allocates the outputs and compiles the kernels their sizes take
        once; returns a Launch, a callable that enqueues the op on those tensors each time it is
        called (for benchmarks: no per-launch checks, allocations or compiles)."""
        torch = sys.modules.get("torch")
        if torch is None or not all(isinstance(t, torch.Tensor) for t in inputs):
            raise _arg_error(f"{self.name}(...) takes torch CUDA tensors; use run_host() for host memory")
        self._count(inputs)
        device = None
        items = []
        for spec, t in zip(self.inputs, inputs):
            device = _check_torch(torch, spec, t, device, "input", self.name)
            items.append((t.data_ptr(), spec.dtype, tuple(t.shape)))
        shapes = self._output_shapes(items)
        # The block these sizes take compiled and loaded now: no launch of the Launch compiles.
        arr, keep = _ffi.make_tensors(items)
        if torch.cuda.current_device() != device.index:
            with torch.cuda.device(device):
                _check(_lib().emmy_op_prepare(self._handle, arr, len(items)))
        else:
            _check(_lib().emmy_op_prepare(self._handle, arr, len(items)))
        self._warn_new()
        if out is None:
            outs = [torch.empty(shape, dtype=_torch_dtype(torch, spec.dtype), device=device)
                    for spec, shape in zip(self.outputs, shapes)]
        else:
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            if len(outs) != len(self.outputs):
                raise _arg_error(f"{self.name} has {len(self.outputs)} output(s), out= gives {len(outs)}")
            for spec, shape, t in zip(self.outputs, shapes, outs):
                if not isinstance(t, torch.Tensor):
                    raise _arg_error(f"{self.name}: out= for output {spec.name} is not a torch tensor")
                _check_torch(torch, spec, t, device, "output", self.name)
                if tuple(t.shape) != shape:
                    raise _arg_error(f"{self.name}: output {spec.name}: out= has shape {tuple(t.shape)}, "
                                     f"the op writes {shape}")
        if stream is None:
            stream = torch.cuda.current_stream(device).cuda_stream
        elif not isinstance(stream, int):
            stream = stream.cuda_stream
        return Launch(self, items, [(t.data_ptr(), s.dtype, tuple(t.shape)) for s, t in zip(self.outputs, outs)],
                      outs, inputs, stream, device)

    # ---- the CPU interpreter --------------------------------------------------------------

    def run_host(self, *inputs, out=None):
        """Runs the op on the CPU SIMT interpreter (no GPU needed) and returns its output, or a
        tuple of them.

        Each input is one of: a HostTensor; a (buffer, shape) pair, the buffer anything with
        the buffer protocol (array.array, bytes, bytearray, memoryview) holding the declared
        dtype's elements (f16/bf16 as raw 16-bit patterns); a memoryview whose ndim is the
        parameter's rank, or a 1-D buffer for a rank-1 parameter; a C-contiguous numpy array
        (np.float16 for f16; np.uint16 raw patterns for bf16 or f16); a contiguous CPU torch
        tensor. Dtypes and shapes are checked by the library.

        Outputs follow the first input: numpy arrays (bf16 as np.uint16 patterns), CPU torch
        tensors, or HostTensors. `out` gives preallocated outputs instead (writable, of any of
        the input forms); they are returned.
        """
        self._count(inputs)
        keep = []
        items = [_host_item(self.name, spec, x, keep, False) for spec, x in zip(self.inputs, inputs)]
        shapes = self._output_shapes(items)
        if out is None:
            outs = [_host_empty(inputs[0] if inputs else None, spec.dtype, shape)
                    for spec, shape in zip(self.outputs, shapes)]
        else:
            # One (buffer, shape) pair is one output, not a sequence of two.
            outs = list(out) if isinstance(out, (list, tuple)) and not _is_buffer_shape_pair(out) else [out]
            if len(outs) != len(self.outputs):
                raise _arg_error(f"{self.name} has {len(self.outputs)} output(s), out= gives {len(outs)}")
        out_items = [_host_item(self.name, spec, x, keep, True) for spec, x in zip(self.outputs, outs)]
        ins, k1 = _ffi.make_tensors(items)
        outs_arr, k2 = _ffi.make_tensors(out_items)
        _check(_lib().emmy_op_run_host(self._handle, ins, len(items), outs_arr, len(out_items)))
        self._warn_new()
        return outs[0] if len(outs) == 1 else tuple(outs)


class Launch:
    """A bound launch (Op.bind): calling it enqueues the op on the bound tensors and stream
    and returns the output tensor (or tuple). `outputs` holds the output tensors."""

    def __init__(self, op, in_items, out_items, outs, inputs, stream, device):
        self.op = op
        self.outputs = outs
        self._keep = (inputs, outs)
        self._ins, self._k1 = _ffi.make_tensors(in_items)
        self._outs, self._k2 = _ffi.make_tensors(out_items)
        self._nin, self._nout = len(in_items), len(out_items)
        self._stream = ctypes.c_void_p(stream or None)
        self._device = device
        self._launch = _lib().emmy_op_launch
        self._result = outs[0] if len(outs) == 1 else tuple(outs)

    def __call__(self):
        torch = sys.modules["torch"]
        if torch.cuda.current_device() != self._device.index:
            with torch.cuda.device(self._device):
                _check(self._launch(self.op._handle, self._ins, self._nin, self._outs, self._nout, self._stream))
        else:
            _check(self._launch(self.op._handle, self._ins, self._nin, self._outs, self._nout, self._stream))
        return self._result


def _torch_dtype(torch, name):
    table = {"bool": torch.bool, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
             "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
    return table[name]


def _check_torch(torch, spec, t, device, role, opname):
    role = f"{opname}: {role}"
    if t.device.type != "cuda":
        raise _arg_error(f"{role} {spec.name} is on {t.device}, not a CUDA device (run_host() runs on the CPU)")
    if device is not None and t.device != device:
        raise _arg_error(f"{role} {spec.name} is on {t.device}, the other tensors on {device}")
    if t.dtype != _torch_dtype(torch, spec.dtype):
        raise _arg_error(f"{role} {spec.name}: expected {spec.dtype}, got {t.dtype}")
    if t.dim() != spec.rank:
        raise _arg_error(f"{role} {spec.name}: expected rank {spec.rank}, got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        raise _arg_error(f"{role} {spec.name} is not contiguous (call .contiguous())")
    return t.device


# ---- host memory ------------------------------------------------------------------------

_TYPECODE = {"bool": "B", "i32": "i" if array.array("i").itemsize == 4 else "l", "i64": "q", "f16": "H", "bf16": "H",
             "f32": "f", "f64": "d"}


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class HostTensor:
    """A contiguous row-major tensor in host memory for run_host without numpy: `data` is an
    array.array (f16 and bf16 as raw 16-bit patterns, bool as bytes), `shape` a tuple,
    `dtype` an Emmy dtype name."""

    def __init__(self, data, shape, dtype):
        if dtype not in _TYPECODE:
            raise _arg_error(f"unknown dtype {dtype!r} (one of {', '.join(DTYPES)})")
        self.data, self.shape, self.dtype = data, tuple(int(d) for d in shape), dtype
        if len(memoryview(data).cast("B")) != _numel(self.shape) * dtype_size(dtype):
            raise _arg_error(f"HostTensor: {len(memoryview(data).cast('B'))} bytes for shape {self.shape} of {dtype}")

    @classmethod
    def empty(cls, shape, dtype):
        """Zero-filled storage of `shape` and `dtype`."""
        return cls(array.array(_TYPECODE[dtype], bytes(_numel(shape) * dtype_size(dtype))), shape, dtype)

    @classmethod
    def from_values(cls, values, shape, dtype):
        """From a flat sequence of numbers (row-major), rounded to `dtype`."""
        values = list(values)
        if len(values) != _numel(shape):
            raise _arg_error(f"{len(values)} values for shape {tuple(shape)}")
        if dtype in ("f16", "bf16"):
            data = array.array("H", _half.encode(values, dtype))
        elif dtype == "bool":
            data = array.array("B", [1 if v else 0 for v in values])
        else:
            data = array.array(_TYPECODE[dtype], values)
        return cls(data, shape, dtype)

    def values(self):
        """The elements as a flat list of Python numbers (floats for float types)."""
        if self.dtype in ("f16", "bf16"):
            return _half.decode(self.data, self.dtype)
        if self.dtype == "bool":
            return [bool(v) for v in self.data]
        return list(self.data)

    def __repr__(self):
        return f"<emmy.HostTensor {self.dtype}{list(self.shape)}>"


def _buffer_pointer(obj, nbytes, keep, writable, what):
    mv = memoryview(obj)
    if not mv.c_contiguous:
        raise _arg_error(f"{what}: the buffer is not C-contiguous")
    mv = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
    if mv.nbytes != nbytes:
        raise _arg_error(f"{what}: the buffer holds {mv.nbytes} bytes, the shape needs {nbytes}")
    if nbytes == 0:
        return None
    if mv.readonly:
        if writable:
            raise _arg_error(f"{what}: the buffer is read-only")
        buf = (ctypes.c_char * nbytes).from_buffer_copy(mv)
    else:
        buf = (ctypes.c_char * nbytes).from_buffer(mv)
    keep.append(buf)
    return ctypes.addressof(buf)


def _host_item(opname, spec, x, keep, writable):
    """(pointer, dtype, shape) of one host tensor argument."""
    what = f"{opname}: {'output' if writable else 'input'} {spec.name}"
    np = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    if isinstance(x, HostTensor):
        ptr = _buffer_pointer(x.data, _numel(x.shape) * dtype_size(x.dtype), keep, writable, what)
        return ptr, x.dtype, x.shape
    if np is not None and isinstance(x, np.ndarray):
        dtype = _numpy_dtype_name(np, x.dtype, spec.dtype)
        if dtype is None:
            raise _arg_error(f"{what}: numpy dtype {x.dtype} has no Emmy dtype")
        if not x.flags.c_contiguous:
            raise _arg_error(f"{what}: the array is not C-contiguous (np.ascontiguousarray)")
        if writable and not x.flags.writeable:
            raise _arg_error(f"{what}: the array is read-only")
        keep.append(x)
        return (x.ctypes.data if x.size else None), dtype, tuple(x.shape)
    if torch is not None and isinstance(x, torch.Tensor):
        if x.device.type != "cpu":
            raise _arg_error(f"{what} is on {x.device}; run_host() takes host memory (call the op itself on CUDA)")
        if not x.is_contiguous():
            raise _arg_error(f"{what} is not contiguous (call .contiguous())")
        names = {torch.bool: "bool", torch.int32: "i32", torch.int64: "i64", torch.float16: "f16",
                 torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64"}
        if x.dtype not in names:
            raise _arg_error(f"{what}: torch dtype {x.dtype} has no Emmy dtype")
        keep.append(x)
        return (x.data_ptr() if x.numel() else None), names[x.dtype], tuple(x.shape)
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], (tuple, list)):
        buf, shape = x[0], tuple(int(d) for d in x[1])
        if any(d < 0 for d in shape):
            raise _arg_error(f"{what}: shape {shape} has a negative extent")
    else:
        try:
            mv = memoryview(x)
        except TypeError:
            raise _arg_error(f"{what}: expected a HostTensor, (buffer, shape), numpy array or CPU torch tensor, "
                             f"got {type(x).__name__}") from None
        if mv.ndim == spec.rank and mv.ndim != 1:
            shape = tuple(mv.shape)
        elif spec.rank == 1:
            shape = (mv.nbytes // dtype_size(spec.dtype),)
        else:
            raise _arg_error(f"{what} has rank {spec.rank}: pass (buffer, shape)")
        buf = x
    ptr = _buffer_pointer(buf, _numel(shape) * dtype_size(spec.dtype), keep, writable, what)
    return ptr, spec.dtype, shape


def _is_buffer_shape_pair(x):
    """Whether x is one (buffer, shape) host tensor: a shape is a sequence of ints, which no
    output tensor is."""
    return (isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], (tuple, list)) and
            all(isinstance(d, int) and not isinstance(d, bool) for d in x[1]))


def _numpy_dtype_name(np, dt, declared):
    if dt == np.uint16 and declared in ("f16", "bf16"):
        return declared
    table = {np.dtype(np.bool_): "bool", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
             np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
    return table.get(np.dtype(dt))


def _host_empty(like, dtype, shape):
    np = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    if np is not None and isinstance(like, np.ndarray):
        npdt = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16, "bf16": np.uint16,
                "f32": np.float32, "f64": np.float64}[dtype]
        return np.zeros(shape, dtype=npdt)
    if torch is not None and isinstance(like, torch.Tensor):
        return torch.zeros(shape, dtype=_torch_dtype(torch, dtype))
    return HostTensor.empty(shape, dtype)


# Plain-Python conversions of 16-bit floats, for host data without numpy.
f16_bits, f16_value, bf16_bits, bf16_value = _half.f16_bits, _half.f16_value, _half.bf16_bits, _half.bf16_value
round_to = _half.round_to
