#!/usr/bin/env python3
"""Every stdlib op's derived gradient (`op G = grad(OP);`) against torch.autograd's, without torch:
tests/data/grad_golden.json holds, for each op, ragged float64 inputs, the outputs and the gradients
torch.autograd computed from the op's torch spelling for random seeds (make_grad_golden.py wrote
it where torch is installed). Here the stdlib is loaded with dtype="f64" (every float of the
program in double precision), the op and its derived gradient run on the interpreter, and every
element of every output and gradient must match: |emmy - torch| <= 1e-6 |torch| + 1e-7 (sdpa's
1 / sqrt(D) is an f32 constant, 1e-8 off the float64 one). No GPU, numpy or torch.

    EMMY_LIBRARY=build/libemmy.so PYTHONPATH=python python3 tests/python/test_grad_golden.py

ctest runs it as `grad_golden`.
"""
import json
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "python"))

import emmy  # noqa: E402

STDLIB = str(ROOT / "stdlib")
GOLDEN = ROOT / "tests" / "data" / "grad_golden.json"


def host(entry):
    return emmy.HostTensor.from_values(entry["values"], entry["shape"], entry["dtype"])


def as_list(result):
    return list(result) if isinstance(result, tuple) else [result]


class GradGolden(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.golden = json.loads(GOLDEN.read_text())
        cls.programs = {m: emmy.load(ROOT / "stdlib" / f"{m}.emmy", stdlib_path=STDLIB, dtype="f64", cache=False)
                        for m in ("nn", "linalg")}

    def close(self, what, got, want):
        self.assertEqual(list(got.shape), want["shape"], what)
        for i, (a, b) in enumerate(zip(got.values(), want["values"])):
            self.assertLessEqual(abs(a - b), 1e-6 * abs(b) + 1e-7, f"{what}: element {i}: emmy {a!r}, torch {b!r}")

    def test_every_stdlib_op(self):
        checked = set()
        for case in self.golden["ops"]:
            module, name = case["module"], case["op"]
            with self.subTest(op=name):
                checked.add((module, name))
                inputs = [host(e) for e in case["inputs"]]
                outputs = as_list(self.programs[module].op(name).run_host(*inputs))
                self.assertEqual(len(outputs), len(case["outputs"]))
                for spec, got, want in zip(self.programs[module].op(name).outputs, outputs, case["outputs"]):
                    self.close(f"{name} output {spec.name}", got, want)
                # (grad(sdpa_explicit), the generic adjoint of a user monoid, is large: its auto-schedule
                # takes about 14 s to decide on two cores; any schedule must give the same gradient.)
                knobs = "PLACE=fuse" if name == "sdpa_explicit" else None
                derived = emmy.compile(f"import std.{module};\n\nop {name}_grad = grad({name});\n",
                                       name=f"{name}_grad.emmy", stdlib_path=STDLIB, dtype="f64", cache=False,
                                       knobs=knobs)
                op = derived.op(f"{name}_grad")
                grads = as_list(op.run_host(*inputs, *[host(s) for s in case["seeds"]]))
                self.assertEqual(len(grads), len(case["gradients"]))
                for spec, got, want in zip(op.outputs, grads, case["gradients"]):
                    self.close(f"{name}_grad output {spec.name}", got, want)
        for module, prog in self.programs.items():  # no stdlib op with a float input left out
            for name in prog.ops:
                if any(s.dtype == "f64" for s in prog.op(name).inputs):
                    self.assertIn((module, name), checked, f"std.{module} op {name} has no recorded torch gradient")


if __name__ == "__main__":
    unittest.main()
