#!/usr/bin/env python3
"""The Python module (python/emmy) on the CPU: no GPU, numpy or torch.

Loads stdlib/nn.emmy through libemmy's C ABI, runs softmax, rmsnorm, layernorm, a small
ragged sdpa (under each of its scalar schedules), cross-entropy and two inline ops on the SIMT
interpreter (Op.run_host) with random inputs that are never zero, and compares every output
element with a float64 computation written here. f16/bf16 outputs must be within one unit in
the last place of the correctly rounded reference (or within a small absolute tolerance where
the result cancels); f32 outputs within a relative 1e-5. The error paths are checked through
the module and through the raw C ABI.

    EMMY_LIBRARY=build/libemmy.so PYTHONPATH=python python3 tests/python/test_emmy_cpu.py

ctest runs it as `python_module`.
"""
import array
import ctypes
import math
import os
import random
import re
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "python"))  # after PYTHONPATH: ctest's (or the caller's) choice wins

import emmy  # noqa: E402
from emmy import _ffi  # noqa: E402

NN = ROOT / "stdlib" / "nn.emmy"
STDLIB = str(ROOT / "stdlib")


def nonzero_values(rng, n, lo=0.1, hi=1.0):
    """n values with magnitude in [lo, hi] and a random sign (never zero)."""
    return [rng.uniform(lo, hi) * rng.choice((-1.0, 1.0)) for _ in range(n)]


def host(rng, shape, dtype, lo=0.1, hi=1.0):
    """A random HostTensor and its exact element values (rounded to dtype)."""
    n = math.prod(shape)
    values = [emmy.round_to(v, dtype) for v in nonzero_values(rng, n, lo, hi)]
    return emmy.HostTensor.from_values(values, shape, dtype), values


def ordered16(bits):
    """A 16-bit float pattern as an integer that orders like the value (for ULP distances)."""
    return -(bits & 0x7FFF) if bits & 0x8000 else bits


def bits16(x, dtype):
    return emmy.f16_bits(x) if dtype == "f16" else emmy.bf16_bits(x)


class EmmyTestCase(unittest.TestCase):
    def assert_elements(self, got, ref, dtype, abs_tol=0.0, rel_tol=1e-5, what="output"):
        """Every element of `got` (decoded values) against the float64 `ref`: 16-bit floats within
        1 ULP of the rounded reference or abs_tol; f32/f64 within abs_tol + rel_tol * |ref|; a
        NaN reference needs a NaN, an infinite one the same infinity."""
        self.assertEqual(len(got), len(ref), f"{what}: {len(got)} elements, expected {len(ref)}")
        bad = []
        for i, (g, r) in enumerate(zip(got, ref)):
            if math.isnan(r) or math.isinf(r):
                ok = math.isnan(g) if math.isnan(r) else g == r  # NaN for NaN, the same infinity
            elif not math.isfinite(g):
                ok = False
            elif dtype in ("f16", "bf16"):
                ulps = abs(ordered16(bits16(g, dtype)) - ordered16(bits16(r, dtype)))
                ok = ulps <= 1 or abs(g - r) <= abs_tol
            elif dtype in ("f32", "f64"):
                ok = abs(g - r) <= abs_tol + rel_tol * abs(r)
            else:
                ok = g == r
            if not ok:
                bad.append(f"[{i}] got {g!r}, expected {r!r}")
        self.assertFalse(bad, f"{what}: {len(bad)} of {len(ref)} elements wrong:\n  " + "\n  ".join(bad[:10]))


def softmax_ref(x, n_rows, c):
    out = []
    for n in range(n_rows):
        row = x[n * c:(n + 1) * c]
        m = max(row)
        e = [math.exp(v - m) for v in row]
        s = sum(e)
        out += [v / s for v in e]
    return out


def sdpa_ref(q, k, v, B, H, S, T, D, E):
    out = []
    scale = 1.0 / math.sqrt(D)
    for b in range(B):
        for h in range(H):
            qb, kb, vb = ((b * H + h) * S * D), ((b * H + h) * T * D), ((b * H + h) * T * E)
            for i in range(S):
                s = [sum(q[qb + i * D + d] * k[kb + j * D + d] for d in range(D)) * scale for j in range(T)]
                m = max(s)
                p = [math.exp(x - m) for x in s]
                l = sum(p)
                out += [sum(p[j] * v[vb + j * E + e] for j in range(T)) / l for e in range(E)]
    return out


class HalfCodecs(unittest.TestCase):
    """The plain-Python f16/bf16 conversions (no library needed)."""

    def test_f16(self):
        self.assertEqual(emmy.f16_bits(1.0), 0x3C00)
        self.assertEqual(emmy.f16_bits(-2.0), 0xC000)
        self.assertEqual(emmy.f16_bits(65504.0), 0x7BFF)
        self.assertEqual(emmy.f16_bits(1e6), 0x7C00)
        self.assertEqual(emmy.f16_bits(-1e6), 0xFC00)
        self.assertEqual(emmy.f16_bits(2.0 ** -24), 0x0001)
        self.assertEqual(emmy.f16_value(0x3555), 0.333251953125)
        self.assertEqual(emmy.f16_bits(1.0 + 2.0 ** -11), 0x3C00)  # a tie rounds to even
        self.assertEqual(emmy.f16_bits(1.0 + 3 * 2.0 ** -11), 0x3C02)
        for bits in range(0, 0x10000, 7):
            if (bits & 0x7C00) != 0x7C00:  # finite
                self.assertEqual(emmy.f16_bits(emmy.f16_value(bits)), bits)

    def test_bf16(self):
        self.assertEqual(emmy.bf16_bits(1.0), 0x3F80)
        self.assertEqual(emmy.bf16_bits(-3.0), 0xC040)
        self.assertEqual(emmy.bf16_bits(1.0 + 2.0 ** -8), 0x3F80)  # a tie rounds to even
        self.assertEqual(emmy.bf16_bits(1.0 + 3 * 2.0 ** -8), 0x3F82)
        self.assertEqual(emmy.bf16_bits(1e39), 0x7F80)
        self.assertTrue(math.isnan(emmy.bf16_value(emmy.bf16_bits(float("nan")))))
        for bits in range(0, 0x10000, 7):
            if (bits & 0x7F80) != 0x7F80:
                self.assertEqual(emmy.bf16_bits(emmy.bf16_value(bits)), bits)

    def test_import_needs_neither_numpy_nor_torch(self):
        code = "import sys, emmy; assert 'numpy' not in sys.modules and 'torch' not in sys.modules"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(emmy.__file__).parents[1])] +
                                                          ([os.environ["PYTHONPATH"]] if "PYTHONPATH" in os.environ
                                                           else [])))
        subprocess.run([sys.executable, "-c", code], env=env, check=True)


class Program(EmmyTestCase):
    @classmethod
    def setUpClass(cls):
        cls.nn = emmy.load(NN, stdlib_path=STDLIB, cache=False)

    def test_version(self):
        self.assertRegex(emmy.version(), r"\d+\.\d+")

    def test_ops_in_source_order(self):
        declared = re.findall(r"^op (\w+)\(", NN.read_text(), re.M)
        self.assertEqual(self.nn.ops, declared)

    def test_signatures(self):
        sdpa = self.nn.op("sdpa")
        self.assertIs(self.nn.op("sdpa"), sdpa)  # cached per name
        self.assertEqual(sdpa.name, "sdpa")
        self.assertEqual(sdpa.inputs, [("q", "f16", 4), ("k", "f16", 4), ("v", "f16", 4)])
        self.assertEqual(sdpa.outputs, [("o", "f16", 4)])
        self.assertEqual(self.nn.op("layernorm").outputs, [("y", "f16", 2), ("mean", "f32", 1), ("rstd", "f32", 1)])
        self.assertEqual(self.nn.op("cross_entropy").inputs, [("logits", "f32", 2), ("target", "i64", 1)])
        self.assertEqual(self.nn.op("cross_entropy_mean").outputs, [("loss", "f32", 0)])
        self.assertIn("__global__", sdpa.cuda)
        self.assertIsInstance(sdpa.knobs, str)
        self.assertIn("PLACE", sdpa.knobs)

    def test_named_schedule_and_knobs(self):
        fa1 = emmy.load(NN, schedule="fa1-scalar", stdlib_path=STDLIB, cache=False).op("sdpa")
        self.assertIn("TILE@e=f64", fa1.knobs)
        cut = emmy.load(NN, knobs={"PLACE": "cut", "TILE": "a:scalar"}, stdlib_path=STDLIB, cache=False).op("sdpa")
        self.assertIn("PLACE=cut", cut.knobs)
        self.assertNotEqual(fa1.cuda, cut.cuda)

    def test_warnings_and_dtype(self):
        prog = emmy.load(NN, knobs="STAGE=d2/tma/ring", stdlib_path=STDLIB, cache=False)
        with self.assertWarnsRegex(emmy.EmmyWarning, r"softmax: W050: STAGE=d2/tma/ring has no effect on the scalar tier"):
            op = prog.op("softmax")
        self.assertEqual(op.warnings, ["W050: STAGE=d2/tma/ring has no effect on the scalar tier (TILE=a:scalar): ignored"])
        bf16 = emmy.load(NN, dtype="bf16", stdlib_path=STDLIB, cache=False).op("layernorm")
        self.assertEqual(bf16.outputs, [("y", "bf16", 2), ("mean", "f32", 1), ("rstd", "f32", 1)])
        with self.assertRaises(emmy.Error) as ctx:
            emmy.load(NN, dtype="i32", stdlib_path=STDLIB)
        self.assertEqual(ctx.exception.message, "dtype 'i32': use f16, bf16, f32 or f64")
        wide = emmy.load(NN, dtype="f64", stdlib_path=STDLIB, cache=False).op("layernorm")
        self.assertEqual(wide.outputs, [("y", "f64", 2), ("mean", "f64", 1), ("rstd", "f64", 1)])

    def test_guarded_blocks(self):
        # stdlib sdpa on sm_90a: the head-dim-64 default, the pingpong block past it (its guard).
        sdpa = emmy.load(NN, target="sm_90a", stdlib_path=STDLIB, cache=False).op("sdpa")
        self.assertIn("wgmma_m64n64k16_f16/w16x1", sdpa.knobs)
        self.assertIn("wgmma_m64n64k16_f16/w16x1", sdpa.knobs_at((1, 8, 1000, 64), (1, 8, 1000, 64), (1, 8, 1000, 64)))
        self.assertIn("PINGPONG=1", sdpa.knobs_at((1, 8, 1000, 128), (1, 8, 1000, 128), (1, 8, 1000, 128)))
        # Past every block's head dims: each passed over once, with W056 at its header.
        with self.assertWarnsRegex(emmy.EmmyWarning, r"sdpa: W056: .*nn.emmy:\d+:1: schedule sdpa for sm_90a as "
                                   r"\"hd256\" \(guarded\) cannot serve these sizes \(D = 300"):
            sdpa.knobs_at((1, 1, 8, 300), (1, 1, 8, 300), (1, 1, 8, 300))
        self.assertEqual(sum(w.startswith("W056") for w in sdpa.warnings), 3)  # hd256, the defaults of sm_90a and sm_90

    def test_output_shapes(self):
        sdpa = self.nn.op("sdpa")
        self.assertEqual(sdpa.output_shapes((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)), [(2, 3, 5, 6)])
        self.assertEqual(self.nn.op("layernorm").output_shapes((4, 9), (9,), (9,)), [(4, 9), (4,), (4,)])
        self.assertEqual(self.nn.op("cross_entropy_mean").output_shapes((3, 5), (3,)), [()])


class Interpreter(EmmyTestCase):
    """Every element of every output against float64, on the CPU interpreter."""

    @classmethod
    def setUpClass(cls):
        cls.nn = emmy.load(NN, stdlib_path=STDLIB, cache=False)

    def setUp(self):
        self.rng = random.Random(20261130)

    def test_softmax(self):
        N, C = 5, 37
        x, xv = host(self.rng, (N, C), "f16", 0.1, 4.0)
        op = self.nn.op("softmax")
        y = op.run_host(x)
        self.assertIsInstance(y, emmy.HostTensor)
        self.assertEqual((y.shape, y.dtype), ((N, C), "f16"))
        ref = softmax_ref(xv, N, C)
        self.assert_elements(y.values(), ref, "f16", what="softmax y")
        # The other input forms give the same bits: (array, shape), a 2-D memoryview, and out=.
        raw = array.array("H", x.data)
        self.assertEqual(op.run_host((raw, (N, C))).data, y.data)
        self.assertEqual(op.run_host(memoryview(raw).cast("B").cast("H", (N, C))).data, y.data)
        out = bytearray(N * C * 2)
        op.run_host(x, out=[(out, (N, C))])  # a list of one (buffer, shape) output
        self.assertEqual(bytes(out), y.data.tobytes())
        y2 = emmy.HostTensor.empty((N, C), "f16")
        self.assertIs(op.run_host(x, out=y2), y2)  # out= objects are returned
        self.assertEqual(y2.data, y.data)

    def test_rmsnorm(self):
        N, C = 4, 33
        x, xv = host(self.rng, (N, C), "f16")
        w, wv = host(self.rng, (C,), "f16", 0.5, 2.0)
        y = self.nn.op("rmsnorm").run_host(x, w)
        ref = []
        for n in range(N):
            row = xv[n * C:(n + 1) * C]
            r = 1.0 / math.sqrt(sum(v * v for v in row) / C + 1e-6)
            ref += [row[c] * r * wv[c] for c in range(C)]
        self.assert_elements(y.values(), ref, "f16", what="rmsnorm y")

    def test_specialized_and_generic_kernels_agree(self):
        # Each run's kernels are specialized to its size class (docs/running.md); specialize=False
        # runs the shape-generic ones. Three classes of layernorm's row: peeled (C % 8 != 0), in
        # the row cache with the vector path, and streamed past it.
        generic = emmy.load(NN, knobs="COOP=t32/v8/r4,PLACE@mean=cut", stdlib_path=STDLIB, cache=False,
                            specialize=False).op("layernorm")
        special = emmy.load(NN, knobs="COOP=t32/v8/r4,PLACE@mean=cut", stdlib_path=STDLIB, cache=False).op("layernorm")
        for N, C in ((5, 77), (3, 1000), (2, 1032)):
            x, _ = host(self.rng, (N, C), "f16")
            g, _ = host(self.rng, (C,), "f16", 0.5, 2.0)
            b, _ = host(self.rng, (C,), "f16")
            for a, e in zip(special.run_host(x, g, b), generic.run_host(x, g, b)):
                self.assertEqual(a.values(), e.values(), f"layernorm at C={C}")

    def test_layernorm(self):
        N, C = 3, 41
        x, xv = host(self.rng, (N, C), "f16")
        g, gv = host(self.rng, (C,), "f16", 0.5, 2.0)
        b, bv = host(self.rng, (C,), "f16")
        y, mean, rstd = self.nn.op("layernorm").run_host(x, g, b)
        self.assertEqual((y.shape, mean.shape, rstd.shape), ((N, C), (N,), (N,)))
        self.assertEqual((mean.dtype, rstd.dtype), ("f32", "f32"))
        ry, rm, rr = [], [], []
        for n in range(N):
            row = xv[n * C:(n + 1) * C]
            mu = sum(row) / C
            var = sum((v - mu) ** 2 for v in row) / C
            rs = 1.0 / math.sqrt(var + 1e-5)
            rm.append(mu)
            rr.append(rs)
            ry += [(row[c] - mu) * rs * gv[c] + bv[c] for c in range(C)]
        self.assert_elements(y.values(), ry, "f16", abs_tol=1e-5, what="layernorm y")
        self.assert_elements(mean.values(), rm, "f32", abs_tol=1e-6, what="layernorm mean")
        self.assert_elements(rstd.values(), rr, "f32", what="layernorm rstd")

    def check_sdpa(self, op, B, H, S, T, D, E):
        q, qv = host(self.rng, (B, H, S, D), "f16")
        k, kv = host(self.rng, (B, H, T, D), "f16")
        v, vv = host(self.rng, (B, H, T, E), "f16")
        o = op.run_host(q, k, v)
        self.assertEqual(o.shape, (B, H, S, E))
        # The tensor-core tier rounds P to f16 before P @ V (as FlashAttention does): an error of
        # up to 2^-11 of the weighted |v|, a few f16 ulps, against the scalar tier's 1 ulp.
        tol = 2e-3 if "mma_" in op.knobs else 1e-5
        self.assert_elements(o.values(), sdpa_ref(qv, kv, vv, B, H, S, T, D, E), "f16", abs_tol=tol,
                             what=f"sdpa o, knobs {op.knobs}")

    def test_sdpa_default(self):
        self.check_sdpa(self.nn.op("sdpa"), 1, 2, 5, 7, 8, 6)

    def test_sdpa_named_schedules(self):
        for name in ("fa1-scalar", "scalar-baseline"):
            with self.subTest(schedule=name):
                op = emmy.load(NN, schedule=name, stdlib_path=STDLIB, cache=False).op("sdpa")
                self.check_sdpa(op, 2, 1, 9, 5, 4, 3)

    def test_cross_entropy(self):
        N, C = 6, 10
        logits, lv = host(self.rng, (N, C), "f32", 0.1, 3.0)
        targets = [self.rng.randrange(C) for _ in range(N)]
        t = emmy.HostTensor.from_values(targets, (N,), "i64")
        loss = self.nn.op("cross_entropy").run_host(logits, t)
        ref = []
        for n in range(N):
            row = lv[n * C:(n + 1) * C]
            m = max(row)
            ref.append(m + math.log(sum(math.exp(v - m) for v in row)) - row[targets[n]])
        self.assert_elements(loss.values(), ref, "f32", abs_tol=1e-5, what="cross_entropy loss")
        mean = self.nn.op("cross_entropy_mean").run_host(logits, t)
        self.assertEqual(mean.shape, ())
        self.assert_elements(mean.values(), [sum(ref) / N], "f32", abs_tol=1e-5, what="cross_entropy_mean loss")

    def test_auto_schedule(self):
        # Ops with no schedule block: the auto-scheduler's knobs, decided at each run's sizes
        # (docs/auto_schedule.md); the run on the interpreter matches the sums.
        prog = emmy.compile("op gemm(a: f16[M, K], b: f16[K, N]) -> (c: f16[M, N]) {\n"
                            "  c[m, n] = sum(k: a[m, k] * b[k, n]);\n}\n\n"
                            "op rows(x: f32[N, C]) -> (y: f32[N]) {\n  y[n] = sum(c: x[n, c]);\n}\n",
                            name="auto.emmy", target="sm_90a", cache=False)
        self.assertIn("TILE=a:wgmma_", prog.op("gemm").knobs_at((1000, 1023), (1023, 777)))
        rows = prog.op("rows")
        self.assertIn("COOP=t", rows.knobs_at((4097, 1000)))
        linalg = ROOT / "stdlib" / "linalg.emmy"
        auto = emmy.load(linalg, schedule="auto", target="sm_90a", stdlib_path=STDLIB, cache=False).op("matmul")
        self.assertIn("TILE=a:wgmma_", auto.knobs_at((4096, 4096), (4096, 4096)))
        x, xv = host(self.rng, (5, 37), "f32")
        y = rows.run_host(x)
        for n in range(5):
            self.assertAlmostEqual(y.values()[n], sum(xv[n * 37:(n + 1) * 37]), places=4)

    def test_computed_output_dims(self):
        # An output dim computed from the inputs' sizes (docs/language.md, "Ops"): the output's
        # shape comes from the inputs' tensors; sizes that leave it empty are an Argument error.
        prog = emmy.compile("op conv1d(x: f32[B, T], w: f32[K]) -> (y: f32[B, T - K + 1]) {\n"
                            "  y[b, t] = sum(k: x[b, t + k] * w[k]);\n}\n\nop conv1d_bwd = grad(conv1d);\n",
                            name="conv.emmy", cache=False)
        conv = prog.op("conv1d")
        B, T, K = 2, 23, 5
        self.assertEqual(conv.output_shapes((B, T), (K,)), [(B, T - K + 1)])
        x, xv = host(self.rng, (B, T), "f32")
        w, wv = host(self.rng, (K,), "f32")
        y = conv.run_host(x, w)
        self.assertEqual(y.shape, (B, T - K + 1))
        ref = [sum(xv[b * T + t + k] * wv[k] for k in range(K)) for b in range(B) for t in range(T - K + 1)]
        self.assert_elements(y.values(), ref, "f32", abs_tol=1e-5, what="conv1d y")
        with self.assertRaises(emmy.Error) as ctx:
            conv.output_shapes((B, 4), (K,))
        self.assertIn("T - K + 1 is 0 at K=5,T=4", ctx.exception.message)
        # The derived op's seed dy has the computed dim too: a dy of another length is refused
        # (it would read x past its end), the right one gives the gradients.
        bwd = prog.op("conv1d_bwd")
        self.assertEqual(bwd.output_shapes((B, T), (K,), (B, T - K + 1)), [(B, T), (K,)])
        for wrong in (T - K, T):
            with self.assertRaises(emmy.Error) as ctx:
                bwd.output_shapes((B, T), (K,), (B, wrong))
            self.assertIn(f"the input dy passed has {wrong}", ctx.exception.message)
        dy, dyv = host(self.rng, (B, T - K + 1), "f32")
        dx, dw = bwd.run_host(x, w, dy)
        n = T - K + 1
        want_dw = [sum(dyv[b * n + t] * xv[b * T + t + k] for b in range(B) for t in range(n)) for k in range(K)]
        want_dx = [sum(dyv[b * n + i - k] * wv[k] for k in range(K) if 0 <= i - k < n) for b in range(B) for i in range(T)]
        self.assert_elements(dw.values(), want_dw, "f32", abs_tol=1e-5, what="conv1d dw")
        self.assert_elements(dx.values(), want_dx, "f32", abs_tol=1e-5, what="conv1d dx")

    def test_inline_source_bf16_and_mixed(self):
        prog = emmy.compile("op twice(x: bf16[N]) -> (y: bf16[N]) {\n  y[n] = x[n] * 2;\n}\n\n"
                            "op mix(a: f16[N], b: bf16[N]) -> (y: f32[N]) {\n  y[n] = a[n] * b[n];\n}\n",
                            name="inline.emmy", cache=False)
        self.assertEqual(prog.ops, ["twice", "mix"])
        x, xv = host(self.rng, (13,), "bf16")
        y = prog.op("twice").run_host(x)
        self.assertEqual(y.values(), [2 * v for v in xv])  # exact
        a, av = host(self.rng, (13,), "f16")
        z = prog.op("mix").run_host(a, x.data)  # a bare 1-D buffer for a rank-1 parameter
        self.assertEqual(z.values(), [p * q for p, q in zip(av, xv)])  # exact in f32

    def test_imported_op(self):
        # An op the program imports runs by its name, as `emmyc run --op` takes it; `ops` lists the
        # program's own.
        prog = emmy.compile("import std.nn;\n\nop twice(x: f16[N, C]) -> (y: f32[N, C]) {\n"
                            "  y[n, c] = softmax(x)[n, c] * 2.0;\n}\n", name="imports.emmy", stdlib_path=STDLIB,
                            cache=False)
        self.assertEqual(prog.ops, ["twice"])
        x, xv = host(self.rng, (3, 5), "f16")
        y = prog.op("softmax").run_host(x)
        twice = prog.op("twice").run_host(x)
        for r in range(3):
            e = [math.exp(v - max(xv[5 * r:5 * r + 5])) for v in xv[5 * r:5 * r + 5]]
            for c in range(5):
                self.assertAlmostEqual(y.values()[5 * r + c], e[c] / sum(e), delta=1e-3)  # f16 output
                self.assertAlmostEqual(twice.values()[5 * r + c], 2 * e[c] / sum(e), delta=2e-3)  # softmax(x) is f16


class Errors(EmmyTestCase):
    @classmethod
    def setUpClass(cls):
        cls.nn = emmy.load(NN, stdlib_path=STDLIB, cache=False)

    def assert_error(self, kind, fn, *args, **kwargs):
        with self.assertRaises(emmy.Error) as cm:
            fn(*args, **kwargs)
        if kind is not None:
            self.assertEqual(cm.exception.kind, kind, cm.exception.message)
        self.assertTrue(cm.exception.message.strip(), "an empty error message")
        return cm.exception

    def test_sizes_that_make_a_divisor_zero_are_refused(self):
        src = ("op grouped(q: f32[H, D], k: f32[KH, D]) -> (s: f32[H]) {\n  let G = H / KH;\n"
               "  s[h] = sum(d: q[h, d] * k[h / G, d]);\n}\n")
        op = emmy.compile(src, name="grouped.emmy").op("grouped")
        q = emmy.HostTensor.from_values([0.5] * 6, (2, 3), "f32")
        k = emmy.HostTensor.from_values([1.0] * 12, (4, 3), "f32")
        e = self.assert_error(emmy.ErrorKind.ARGUMENT, op.run_host, q, k)  # G = 2 / 4 = 0
        self.assertIn("divides by H / KH, which is 0 there", e.message)
        self.assertIn("[E069]", e.message)
        k2 = emmy.HostTensor.from_values([1.0] * 3, (1, 3), "f32")
        self.assertEqual(op.run_host(q, k2).values(), [1.5, 1.5])  # G = 2: both rows read k[0]

    def test_syntax_error_has_location_and_caret(self):
        src = "op f(x: f16[N]) -> (y: f16[N]) {\n  y[n] = x[n] +;\n}\n"
        e = self.assert_error(emmy.ErrorKind.SOURCE, emmy.compile, src, name="broken.emmy")
        self.assertRegex(e.message, r"broken\.emmy:2:\d+: error")
        self.assertRegex(e.message, r"(?m)^\s*\|\s*\^")
        self.assertEqual(str(e), e.message)

    def test_check_error_has_location_and_caret(self):
        src = ("op f(q: f16[S, D], k: f16[T, D]) -> (o: f16[S]) {\n"
               "  o[i] = sum(d: q[i, d] * k[i, d]);\n}\n")
        e = self.assert_error(emmy.ErrorKind.SOURCE, emmy.compile, src, name="gqa.emmy")
        self.assertRegex(e.message, r"gqa\.emmy:2:\d+: error\[E\d+\]")
        self.assertIn("^", e.message)

    def test_missing_file(self):
        e = self.assert_error(None, emmy.load, ROOT / "no" / "such.emmy")
        self.assertIn("such.emmy", e.message)

    def test_unknown_op(self):
        e = self.assert_error(emmy.ErrorKind.ARGUMENT, self.nn.op, "no_such_op")
        self.assertIn("no_such_op", e.message)

    def test_unknown_schedule_and_bad_knobs(self):
        self.assert_error(None, lambda: emmy.load(NN, schedule="no-such-schedule", stdlib_path=STDLIB).op("sdpa"))
        self.assert_error(None, lambda: emmy.load(NN, knobs="TILE=bogus", stdlib_path=STDLIB).op("sdpa"))

    def test_wrong_tensor_count(self):
        op = self.nn.op("softmax")
        x, _ = host(random.Random(1), (2, 3), "f16")
        self.assert_error(emmy.ErrorKind.ARGUMENT, op.run_host, x, x)
        self.assert_error(emmy.ErrorKind.ARGUMENT, op.run_host)
        self.assert_error(emmy.ErrorKind.ARGUMENT, op.run_host, x, out=[x, x])

    def test_wrong_shape(self):
        rng = random.Random(2)
        x, _ = host(rng, (3, 4), "f16")
        w, _ = host(rng, (5,), "f16")
        self.assert_error(emmy.ErrorKind.ARGUMENT, self.nn.op("rmsnorm").run_host, x, w)  # C = 4 and 5
        self.assert_error(emmy.ErrorKind.ARGUMENT, self.nn.op("rmsnorm").output_shapes, (3, 4), (5,))
        flat, _ = host(rng, (12,), "f16")
        self.assert_error(emmy.ErrorKind.ARGUMENT, self.nn.op("softmax").run_host, flat)  # rank 1 for rank 2
        wrong_out = emmy.HostTensor.empty((4, 3), "f16")
        self.assert_error(emmy.ErrorKind.ARGUMENT, self.nn.op("softmax").run_host, x, out=wrong_out)

    def test_wrong_dtype(self):
        x, _ = host(random.Random(3), (2, 3), "f32")
        self.assert_error(emmy.ErrorKind.ARGUMENT, self.nn.op("softmax").run_host, x)
        y, _ = host(random.Random(3), (2, 3), "f16")
        self.assert_error(emmy.ErrorKind.ARGUMENT, self.nn.op("softmax").run_host, y,
                          out=emmy.HostTensor.empty((2, 3), "bf16"))

    def test_python_side_checks(self):
        op = self.nn.op("softmax")
        self.assert_error(emmy.ErrorKind.ARGUMENT, op.run_host, [[1.0, 2.0]])  # not a buffer
        self.assert_error(emmy.ErrorKind.ARGUMENT, op.run_host, (bytes(10), (2, 3)))  # 10 bytes for 6 f16
        self.assert_error(emmy.ErrorKind.ARGUMENT, emmy.HostTensor, array.array("H", [0] * 5), (2, 3), "f16")
        x, _ = host(random.Random(4), (2, 3), "f16")
        self.assert_error(emmy.ErrorKind.ARGUMENT, op.run_host, x, out=[(bytes(12), (2, 3))])  # read-only output
        self.assert_error(emmy.ErrorKind.ARGUMENT, op, x)  # the GPU call takes torch tensors

    def test_nul_byte_in_source(self):
        """The C ABI takes a C string: a NUL would silently end the source there."""
        src = "op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }\nop g(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x\0[i];\n}\n"
        e = self.assert_error(emmy.ErrorKind.SOURCE, emmy.compile, src, name="nul.emmy", stdlib_path=STDLIB)
        self.assertTrue(e.message.startswith("nul.emmy:3:11: error: the source holds a NUL byte"), e.message)

    def test_out_is_one_buffer_shape_pair(self):
        prog = emmy.compile("op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] * 2.0; }", stdlib_path=STDLIB, cache=False)
        x = array.array("f", [1, 2, 3])
        y = array.array("f", [0, 0, 0])
        got = prog.op("f").run_host((x, (3,)), out=(y, (3,)))
        self.assertEqual(list(y), [2.0, 4.0, 6.0])
        self.assertEqual(got, (y, (3,)))
        self.assert_error(emmy.ErrorKind.ARGUMENT, prog.op("f").run_host, (x, (3,)), out=(y, (-3,)))

    def test_deep_expression_in_a_small_thread(self):
        """A 1000-deep expression from a thread with a 256 KB stack: the library runs its passes
        on its own large stack; one level more is E004, not a crash."""
        import threading
        results = {}

        def work():
            chain = " + ".join(["x[i]"] * 1000)
            src = "op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = %s;\n}\n"
            prog = emmy.compile(src % chain, stdlib_path=STDLIB, cache=False)
            results["ok"] = prog.op("f").run_host(emmy.HostTensor.from_values([1.0] * 4, (4,), "f32")).values()
            try:
                emmy.compile(src % (chain + " + x[i]"), name="deep.emmy", stdlib_path=STDLIB, cache=False)
            except emmy.Error as e:
                results["deep"] = e

        old = threading.stack_size(256 * 1024)
        try:
            t = threading.Thread(target=work)
            t.start()
            t.join()
        finally:
            threading.stack_size(old)
        self.assertEqual(results.get("ok"), [1000.0] * 4)
        self.assertEqual(results["deep"].kind, emmy.ErrorKind.SOURCE)
        self.assertIn("deep.emmy:2:", results["deep"].message)
        self.assertIn("error[E004]", results["deep"].message)

    def test_raw_c_abi_checks(self):
        """The library's own checks, without the module's: tensor counts, dtype, output shape."""
        lib = emmy.library()
        op = self.nn.op("softmax")
        x = (ctypes.c_uint16 * 6)(*[0x3C00] * 6)
        y = (ctypes.c_uint16 * 6)()

        def tensors(*specs):
            return _ffi.make_tensors([(ctypes.addressof(buf), dt, shape) for buf, dt, shape in specs])

        # Two valid entries each, so that a count of 2 reads valid memory.
        ins, k1 = tensors((x, "f16", (2, 3)), (x, "f16", (2, 3)))
        outs, k2 = tensors((y, "f16", (2, 3)), (y, "f16", (2, 3)))
        self.assertEqual(lib.emmy_op_run_host(op._handle, ins, 1, outs, 1), 0, lib.emmy_last_error())
        self.assertEqual(list(y), [emmy.f16_bits(1 / 3)] * 6)
        for args, what in [((ins, 2, outs, 1), "two inputs"), ((ins, 0, outs, 1), "no input"),
                           ((ins, 1, outs, 0), "no output"), ((ins, 1, outs, 2), "two outputs")]:
            with self.subTest(what):
                status = lib.emmy_op_run_host(op._handle, *args)
                self.assertEqual(status, emmy.ErrorKind.ARGUMENT, what)
                self.assertTrue(lib.emmy_last_error(), what)
        bad_dtype, k3 = tensors((x, "f32", (2, 3)))
        self.assertEqual(lib.emmy_op_run_host(op._handle, bad_dtype, 1, outs, 1), emmy.ErrorKind.ARGUMENT)
        bad_out, k4 = tensors((y, "f16", (3, 2)))
        self.assertEqual(lib.emmy_op_run_host(op._handle, ins, 1, bad_out, 1), emmy.ErrorKind.ARGUMENT)
        shape = (ctypes.c_int64 * 2)()
        self.assertEqual(lib.emmy_op_output_shape(op._handle, ins, 0, 0, shape), emmy.ErrorKind.ARGUMENT)
        self.assertEqual(lib.emmy_op_output_shape(op._handle, ins, 1, 1, shape), emmy.ErrorKind.ARGUMENT)
        self.assertEqual(lib.emmy_op_output_shape(op._handle, ins, 1, 0, shape), 0)
        self.assertEqual(list(shape), [2, 3])


if __name__ == "__main__":
    unittest.main(verbosity=2)
