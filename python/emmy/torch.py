"""Emmy ops as PyTorch operators: torch.library custom ops with a fake (meta) implementation
and, for autograd, a derived backward op.

    import emmy, emmy.torch
    prog = emmy.load("examples/training.emmy")
    attention = emmy.torch.custom_op(prog, "attend", backward="attend_bwd")
    o, m, l = attention(q, k, v)          # torch.ops.emmy.attend: CUDA (the GPU kernels) or CPU
    o.float().square().sum().backward()   # (the interpreter); attend_bwd computes dq, dk, dv

`custom_op(program, name, backward=...)` defines `torch.ops.<namespace>.<name>`:
- CUDA tensors run the op's kernels on the current stream (no synchronization: it can be captured
  in a CUDA graph once a call at the same sizes has compiled them); CPU tensors run on Emmy's
  interpreter (slow: small shapes, gradient checks).
- Its fake implementation gives the output shapes from the op's signature, so `torch.compile`
  traces through it without a graph break (sizes are specialized: a new shape recompiles).
- Autograd takes the backward op: `backward="NAME"` an op of the same program, typically
  `op NAME = grad(OP) saving ...;` (docs/language.md, derived ops); `backward=None` derives
  `grad(OP)` (with respect to every float input, nothing saved); `backward=False` registers
  none. The backward's tensors bind by name, as `grad` names them: an input of the forward's
  name takes that input, one of a forward output's name takes that output (saved), `dX` (or
  `d_X`) takes the gradient flowing into output X (zeros when none flows), and its output `dX`
  is the gradient of input X. Forward outputs without a seed in the backward (a row's saved
  statistics) are marked non-differentiable.

For `torch.autograd.gradcheck`, load the program with dtype="f64" and pass float64 CPU tensors.
Needs PyTorch 2.4 or later (torch.library.register_fake and register_autograd).
"""
import keyword

import torch

from . import Error, ErrorKind, Program
from . import compile as compile_source

__all__ = ["custom_op", "CustomOp"]

_TORCH_DTYPES = {"bool": torch.bool, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
                 "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
_FLOATS = ("f16", "bf16", "f32", "f64")
_libraries = {}  # namespace -> torch.library.Library (kept alive: dropping it removes the ops)


def _arg_error(message):
    return Error(ErrorKind.ARGUMENT, message)


def _library(namespace):
    if namespace not in _libraries:
        _libraries[namespace] = torch.library.Library(namespace, "FRAGMENT")
    return _libraries[namespace]


def _schema_name(name):
    """A parameter name the schema parser takes (Python keywords get a trailing underscore)."""
    return name + "_" if keyword.iskeyword(name) or name in ("Tensor", "int", "float", "bool") else name


def _schema(name, op):
    params = ", ".join(f"Tensor {_schema_name(s.name)}" for s in op.inputs)
    results = "Tensor" if len(op.outputs) == 1 else "(" + ", ".join("Tensor" for _ in op.outputs) + ")"
    return f"{name}({params}) -> {results}"


def _seed_of(name, outputs):
    """The forward output whose gradient the backward input `name` is (dX or d_X), or None."""
    for prefix in ("d_", "d"):
        if name.startswith(prefix) and name[len(prefix):] in outputs:
            return name[len(prefix):]
    return None


class _Binding:
    """How a backward op's tensors bind to the forward's (by name): each backward input is
    ("input", i), ("output", i) or ("seed", i); each backward output the forward input index
    it is the gradient of."""

    def __init__(self, forward, backward):
        ins = [s.name for s in forward.inputs]
        outs = [s.name for s in forward.outputs]
        self.sources = []
        for s in backward.inputs:
            if s.name in ins:
                self.sources.append(("input", ins.index(s.name)))
            elif s.name in outs:
                self.sources.append(("output", outs.index(s.name)))
            elif _seed_of(s.name, outs) is not None:
                self.sources.append(("seed", outs.index(_seed_of(s.name, outs))))
            else:
                raise _arg_error(
                    f"backward op {backward.name}: input {s.name} is neither an input nor an output of "
                    f"{forward.name} ({', '.join(ins + outs)}) nor the gradient of an output "
                    f"(d<output>); declare it as `op {backward.name} = grad({forward.name}) saving ...;`")
        self.gradients = []
        for s in backward.outputs:
            target = _seed_of(s.name, ins)
            if target is None:
                raise _arg_error(f"backward op {backward.name}: output {s.name} is not the gradient of an input of "
                                 f"{forward.name} (d<input>: {', '.join('d' + n for n in ins)})")
            self.gradients.append(ins.index(target))
        seeded = {i for kind, i in self.sources if kind == "seed"}
        self.non_differentiable = [i for i in range(len(outs)) if i not in seeded]
        self.saved_inputs = sorted({i for kind, i in self.sources if kind == "input"})
        self.saved_outputs = sorted({i for kind, i in self.sources if kind == "output"})


class CustomOp:
    """An Emmy op registered as `torch.ops.<namespace>.<name>` (see emmy.torch). Call it like the
    op; `forward` and `backward` are the emmy.Op objects, `torch_op` the registered operator."""

    def __init__(self, program, name, backward=None, namespace="emmy", torch_name=None):
        if not isinstance(program, Program):
            raise _arg_error(f"custom_op takes an emmy.Program (emmy.load / emmy.compile), got {type(program).__name__}")
        self.forward = program.op(name)
        self.name = torch_name or name
        self.namespace = namespace
        self.qualname = f"{namespace}::{self.name}"
        self.backward = self._backward_op(program, name, backward)
        self.binding = _Binding(self.forward, self.backward) if self.backward is not None else None
        lib = _library(namespace)
        try:
            lib.define(_schema(self.name, self.forward))
        except RuntimeError as e:
            raise _arg_error(f"custom_op: {self.qualname} cannot be defined ({str(e).splitlines()[0]}); "
                             f"pass torch_name= or namespace= for another name") from None
        lib.impl(self.name, self._run, "CUDA")
        lib.impl(self.name, self._run, "CPU")
        torch.library.register_fake(self.qualname, self._fake, lib=lib)
        self.torch_op = getattr(getattr(torch.ops, namespace), self.name).default
        self.backward_op = None
        if self.backward is not None:
            self._define_backward(lib)
            torch.library.register_autograd(self.qualname, self._autograd_backward, setup_context=self._setup_context,
                                            lib=lib)

    def __call__(self, *tensors):
        return self.torch_op(*tensors)

    def __repr__(self):
        return f"<emmy.torch.CustomOp {self.qualname} backward={self.backward.name if self.backward else None}>"

    # ---- the backward op ----------------------------------------------------------------

    @staticmethod
    def _backward_op(program, name, backward):
        if backward is False:
            return None
        if isinstance(backward, str):
            return program.op(backward)
        if backward is not None:
            raise _arg_error(f"custom_op: backward= takes an op name, None (derive grad({name})) or False")
        source = program._source
        if source.path is not None:
            with open(source.path, encoding="utf-8") as f:
                text = f.read()
        else:
            text = source.text
        derived = f"{name}__grad"
        # The program's options but its knob list and named schedule, which were written for the
        # forward (the derived op has no schedule block: it takes its auto-schedule).
        options = {k: v for k, v in program.options.items() if k not in ("knobs", "schedule")}
        return compile_source(f"{text}\n\nop {derived} = grad({name});\n", name=source.name, **options).op(derived)

    def _define_backward(self, lib):
        name = f"{self.name}__backward"
        lib.define(_schema(name, self.backward))
        lib.impl(name, self._run_backward, "CUDA")
        lib.impl(name, self._run_backward, "CPU")
        torch.library.register_fake(f"{self.namespace}::{name}", self._fake_backward, lib=lib)
        self.backward_op = getattr(getattr(torch.ops, self.namespace), name).default

    # ---- implementations ------------------------------------------------------------------

    @staticmethod
    def _call(op, tensors):
        tensors = [t.contiguous() for t in tensors]
        on_gpu = bool(tensors) and tensors[0].device.type == "cuda"
        return op(*tensors) if on_gpu else op.run_host(*tensors)

    def _run(self, *tensors):
        return self._call(self.forward, tensors)

    def _run_backward(self, *tensors):
        return self._call(self.backward, tensors)

    @staticmethod
    def _empties(op, tensors):
        shapes = op.output_shapes(*[tuple(int(d) for d in t.shape) for t in tensors])
        device = tensors[0].device if tensors else torch.device("cpu")
        outs = [torch.empty(shape, dtype=_TORCH_DTYPES[spec.dtype], device=device)
                for spec, shape in zip(op.outputs, shapes)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _fake(self, *tensors):
        return self._empties(self.forward, tensors)

    def _fake_backward(self, *tensors):
        return self._empties(self.backward, tensors)

    # ---- autograd ----------------------------------------------------------------------------

    def _setup_context(self, ctx, inputs, output):
        outs = output if isinstance(output, tuple) else (output,)
        b = self.binding
        ctx.save_for_backward(*[inputs[i] for i in b.saved_inputs], *[outs[i] for i in b.saved_outputs])
        ctx.emmy_outputs = [(o.shape, o.dtype, o.device) for o in outs]
        nondiff = [outs[i] for i in b.non_differentiable if outs[i].is_floating_point()]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)

    def _autograd_backward(self, ctx, *grads):
        b = self.binding
        saved = ctx.saved_tensors
        inputs = dict(zip(b.saved_inputs, saved[:len(b.saved_inputs)]))
        outputs = dict(zip(b.saved_outputs, saved[len(b.saved_inputs):]))
        args = []
        for kind, i in b.sources:
            if kind == "input":
                args.append(inputs[i])
            elif kind == "output":
                args.append(outputs[i])
            else:
                shape, dtype, device = ctx.emmy_outputs[i]
                g = grads[i]
                args.append(torch.zeros(shape, dtype=dtype, device=device) if g is None else g.to(dtype))
        result = self.backward_op(*args)
        result = result if isinstance(result, tuple) else (result,)
        out = [None] * len(self.forward.inputs)
        for g, i in zip(result, b.gradients):
            out[i] = g
        return tuple(out)


def custom_op(program, name, backward=None, namespace="emmy", torch_name=None):
    """Registers the op `name` of `program` as torch.ops.<namespace>.<torch_name or name> and
    returns its CustomOp (callable). backward: an op name of the program, None to derive
    grad(name), or False for none (see the module's documentation)."""
    return CustomOp(program, name, backward, namespace, torch_name)
