#!/usr/bin/env python3
"""emmy.torch: Emmy ops as torch.library custom ops, with autograd through derived ops.

On the CPU (Emmy's interpreter, float64 programs): torch.autograd.gradcheck of softmax with its
backward derived on the fly, of layernorm with `grad(layernorm) saving mean, rstd`, and of
attention returning (o, m, l) with `grad(sdpa) saving o, m, l` (FlashAttention-2's inputs), causal
too; torch.compile(fullgraph=True) traces the ops and their backward without a graph break and
gives the eager gradients; the errors of a backward that does not bind; every stdlib op's derived
gradient against torch.autograd of its torch spelling at ragged shapes. On a CUDA device
(skipped without one): the f16 attention forward and backward against float64 torch.autograd,
every element (outputs NaN-filled where Emmy writes into given tensors); a run on a side stream;
a CUDA graph capturing forward and backward, replayed on new inputs.

    EMMY_LIBRARY=build/libemmy.so PYTHONPATH=python python3 tests/python/test_emmy_torch.py

Exits 77 (skipped) without torch. ctest runs it as `python_torch`.
"""
import os
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    import torch
except ImportError:
    print("test_emmy_torch: SKIPPED: no torch")
    sys.exit(77)

import emmy  # noqa: E402
import emmy.torch  # noqa: E402
from stdlib_torch import STDLIB_OPS, attention_reference, random_inputs  # noqa: E402

STDLIB = str(ROOT / "stdlib")

# Attention that returns the row statistics its backward takes, and that backward.
SOURCE = """
import std.nn;

op attend(q: f16[B, H, S, D], k: f16[B, H, T, D], v: f16[B, H, T, E]) -> (o: f16[B, H, S, E], m: f32[B, H, S], l: f32[B, H, S]) {
  s[b, h, i, j] = sum(d: q[b, h, i, d] * k[b, h, j, d]) * (1.0 / sqrt(D));
  m[b, h, i] = max(j: s[b, h, i, j]);
  p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i]);
  l[b, h, i] = sum(j: p[b, h, i, j]);
  o[b, h, i, e] = sum(j: p[b, h, i, j] * v[b, h, j, e]) / l[b, h, i];
}

op attend_causal(q: f16[B, H, S, D], k: f16[B, H, S, D], v: f16[B, H, S, E]) -> (o: f16[B, H, S, E], m: f32[B, H, S], l: f32[B, H, S]) {
  s[b, h, i, j] = sum(d: q[b, h, i, d] * k[b, h, j, d]) * (1.0 / sqrt(D));
  m[b, h, i] = max(j where j <= i: s[b, h, i, j]);
  p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i]);
  l[b, h, i] = sum(j where j <= i: p[b, h, i, j]);
  o[b, h, i, e] = sum(j where j <= i: p[b, h, i, j] * v[b, h, j, e]) / l[b, h, i];
}

op attend_bwd = grad(sdpa) saving o, m, l;
op attend_causal_bwd = grad(sdpa_causal) saving o, m, l;
op layernorm_bwd = grad(layernorm) saving mean, rstd;
op softmax_twice(x: f16[N, C]) -> (y: f16[N, C]) {
  y[n, c] = softmax(x)[n, c] * 2.0;
}
"""

_count = [0]


def unique(prefix):
    """A fresh torch operator name: ops stay registered for the process."""
    _count[0] += 1
    return f"{prefix}_{_count[0]}"


def program(dtype=None, **kw):
    return emmy.compile(SOURCE, name="test_emmy_torch.emmy", stdlib_path=STDLIB, dtype=dtype, cache=False, **kw)


class Cpu(unittest.TestCase):
    """The interpreter, float64 programs (dtype="f64"): gradcheck against finite differences."""

    @classmethod
    def setUpClass(cls):
        cls.prog = program(dtype="f64")
        torch.manual_seed(0)

    def randn(self, *shape):
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)

    def test_softmax_derived_backward(self):
        op = emmy.torch.custom_op(self.prog, "softmax_twice", torch_name=unique("softmax_twice"))
        self.assertEqual(op.backward.name, "softmax_twice__grad")
        x = self.randn(3, 5)
        self.assertTrue(torch.autograd.gradcheck(op, (x,)))
        y = op(x)
        torch.testing.assert_close(y, 2 * torch.softmax(x, -1), rtol=1e-12, atol=1e-12)

    def test_layernorm_saving_statistics(self):
        op = emmy.torch.custom_op(self.prog, "layernorm", backward="layernorm_bwd", torch_name=unique("layernorm"))
        x, g, b = self.randn(3, 6), self.randn(6), self.randn(6)
        self.assertTrue(torch.autograd.gradcheck(op, (x, g, b)))

    def test_attention_saving_o_m_l(self):
        for name, causal, (S, T) in (("attend", False, (3, 5)), ("attend_causal", True, (4, 4))):
            with self.subTest(name=name):
                op = emmy.torch.custom_op(self.prog, name, backward=name + "_bwd", torch_name=unique(name))
                self.assertEqual(op.binding.non_differentiable, [1, 2])  # m and l: saved, no seed
                q, k, v = self.randn(1, 2, S, 3), self.randn(1, 2, T, 3), self.randn(1, 2, T, 2)
                self.assertTrue(torch.autograd.gradcheck(op, (q, k, v)))
                o, m, l = op(q, k, v)
                self.assertFalse(m.requires_grad or l.requires_grad)
                # (the op's 1 / sqrt(D) is an f32 constant: 1e-8 from the float64 one)
                torch.testing.assert_close(o, attention_reference(q, k, v, causal), rtol=1e-6, atol=1e-7)
                # A loss that reads o alone: the gradients of torch's own attention.
                do = torch.randn_like(o)
                got = torch.autograd.grad(o, (q, k, v), do)
                want = torch.autograd.grad(attention_reference(q, k, v, causal), (q, k, v), do)
                for a, b in zip(got, want):
                    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)

    def test_compile_without_graph_breaks(self):
        op = emmy.torch.custom_op(self.prog, "attend", backward="attend_bwd", torch_name=unique("attend"))

        def loss(q, k, v):
            o, m, l = op(q, k, v)
            return (o * o).sum() + 0 * m.sum()

        q, k, v = self.randn(1, 1, 3, 2), self.randn(1, 1, 4, 2), self.randn(1, 1, 4, 2)
        torch._dynamo.reset()
        compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")  # fullgraph: a break raises
        got = torch.autograd.grad(compiled(q, k, v), (q, k, v))
        want = torch.autograd.grad(loss(q, k, v), (q, k, v))
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)

    def test_errors(self):
        prog = emmy.compile(SOURCE + "op other_bwd = grad(softmax);\n", name="errors.emmy", stdlib_path=STDLIB,
                            cache=False, dtype="f64")
        with self.assertRaises(emmy.Error) as ctx:
            emmy.torch.custom_op(prog, "attend", backward="other_bwd", torch_name=unique("bad"))
        self.assertIn("input x is neither an input nor an output of attend", ctx.exception.message)
        name = unique("twice")
        emmy.torch.custom_op(prog, "softmax", backward="other_bwd", torch_name=name)
        with self.assertRaises(emmy.Error) as ctx:
            emmy.torch.custom_op(prog, "softmax", backward="other_bwd", torch_name=name)
        self.assertIn("pass torch_name= or namespace=", ctx.exception.message)


class StdlibGradients(unittest.TestCase):
    """Every stdlib op's derived gradient against torch.autograd in float64 on the interpreter,
    at ragged shapes: the outputs, then the gradients for random seeds into every float output."""

    def test_every_stdlib_op(self):
        progs = {m: emmy.load(ROOT / "stdlib" / f"{m}.emmy", stdlib_path=STDLIB, dtype="f64", cache=False)
                 for m in ("nn", "linalg")}
        covered = {m: set() for m in progs}
        g = torch.Generator().manual_seed(5)
        for module, name, reference, shapes in STDLIB_OPS:
            with self.subTest(op=name):
                covered[module].add(name)
                op = emmy.torch.custom_op(progs[module], name, torch_name=unique(name))
                inputs = random_inputs(shapes, g)
                got = op(*inputs)
                want = reference(*inputs)
                got = got if isinstance(got, tuple) else (got,)
                want = want if isinstance(want, tuple) else (want,)
                for a, b in zip(got, want):  # (sdpa's 1 / sqrt(D) is an f32 constant: 1e-8 off)
                    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
                seeds = [torch.randn(a.shape, generator=g, dtype=torch.float64) for a in got]
                floats = [t for t in inputs if t.is_floating_point()]
                mine = torch.autograd.grad(got, floats, seeds)
                theirs = torch.autograd.grad(want, floats, seeds)
                for a, b in zip(mine, theirs):
                    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
        for module, prog in progs.items():  # no stdlib op with a float input left out
            for name in prog.ops:
                spec = prog.op(name)
                if any(s.dtype == "f64" for s in spec.inputs):
                    self.assertIn(name, covered[module], f"std.{module} op {name} has no gradient check here")


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
class Gpu(unittest.TestCase):
    """The GPU kernels: f16 attention and its backward, streams, CUDA graphs."""

    @classmethod
    def setUpClass(cls):
        cls.prog = program()

    def inputs(self, B, H, S, T, D, seed=0):
        g = torch.Generator(device="cuda").manual_seed(seed)
        mk = lambda *s: torch.randn(*s, device="cuda", dtype=torch.float16, generator=g)
        return mk(B, H, S, D), mk(B, H, T, D), mk(B, H, T, D)

    def check_attention(self, op, q, k, v, causal):
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
        o, m, l = op(qg, kg, vg)
        do = torch.randn_like(o)
        grads = torch.autograd.grad(o, (qg, kg, vg), do)
        q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
        o64 = attention_reference(q64, k64, v64, causal)
        want = torch.autograd.grad(o64, (q64, k64, v64), do.double())
        self.assertFalse(torch.isnan(o).any())
        torch.testing.assert_close(o.double(), o64.detach(), rtol=2e-2, atol=2e-2)
        for g, w in zip(grads, want):
            self.assertFalse(torch.isnan(g).any())
            torch.testing.assert_close(g.double(), w, rtol=2e-2, atol=2e-2)

    def test_attention_forward_backward(self):
        for name, causal, (S, T) in (("attend", False, (200, 333)), ("attend_causal", True, (257, 257))):
            with self.subTest(name=name):
                op = emmy.torch.custom_op(self.prog, name, backward=name + "_bwd", torch_name=unique(name))
                self.check_attention(op, *self.inputs(2, 3, S, T, 64), causal)

    def test_side_stream(self):
        op = emmy.torch.custom_op(self.prog, "attend", backward="attend_bwd", torch_name=unique("attend"))
        q, k, v = self.inputs(1, 2, 130, 130, 64, seed=1)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            o, _, _ = op(q, k, v)
        side.synchronize()
        torch.testing.assert_close(o.double(), attention_reference(q, k, v, False), rtol=2e-2, atol=2e-2)

    def test_cuda_graph(self):
        op = emmy.torch.custom_op(self.prog, "attend", backward="attend_bwd", torch_name=unique("attend"))
        q, k, v = (t.requires_grad_() for t in self.inputs(1, 2, 192, 256, 64, seed=2))
        do = torch.randn(1, 2, 192, 64, device="cuda", dtype=torch.float16)

        def step():
            o, _, _ = op(q, k, v)
            return (o,) + torch.autograd.grad(o, (q, k, v), do)

        side = torch.cuda.Stream()  # warm up (compiles the kernels) on a side stream, as capture needs
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = step()
        for seed in (3, 4):  # new values in the captured tensors, the graph replayed
            nq, nk, nv = self.inputs(1, 2, 192, 256, 64, seed=seed)
            with torch.no_grad():
                q.copy_(nq), k.copy_(nk), v.copy_(nv)
            graph.replay()
            torch.cuda.synchronize()
            eager = step()
            for a, b in zip(captured, eager):
                torch.testing.assert_close(a, b, rtol=0, atol=0)


if __name__ == "__main__":
    unittest.main()
