#!/usr/bin/env python3
"""Records torch.autograd's gradients of every stdlib op (stdlib_torch.STDLIB_OPS: each op's torch
spelling) at ragged shapes, in float64 on the CPU, into tests/data/grad_golden.json: the inputs,
the forward outputs, a random seed for every output and the gradient of every float input.
test_grad_golden.py then checks Emmy's derived ops (`grad(OP)`, on the interpreter) against them
where torch is not installed (CI).

    python3 tests/python/make_grad_golden.py [--out tests/data/grad_golden.json]

Needs torch (the GPU machine has it); run it again when an op of STDLIB_OPS changes.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch  # noqa: E402
from stdlib_torch import STDLIB_OPS, random_inputs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def flat(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()] if t.is_floating_point() else \
        [int(x) for x in t.reshape(-1).tolist()]


def entry(t):
    return {"shape": list(t.shape), "dtype": "f64" if t.is_floating_point() else "i64", "values": flat(t)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "grad_golden.json"))
    args = ap.parse_args()
    g = torch.Generator().manual_seed(5)
    ops = []
    for module, name, reference, shapes in STDLIB_OPS:
        inputs = random_inputs(shapes, g)
        outputs = reference(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        seeds = [torch.randn(o.shape, generator=g, dtype=torch.float64) for o in outputs]
        floats = [t for t in inputs if t.is_floating_point()]
        grads = torch.autograd.grad(outputs, floats, seeds)
        ops.append({"module": module, "op": name, "inputs": [entry(t) for t in inputs],
                    "outputs": [entry(o) for o in outputs], "seeds": [entry(s) for s in seeds],
                    "gradients": [entry(d) for d in grads]})
    doc = {"about": "torch.autograd gradients of the stdlib ops' torch spellings (float64, CPU); made by "
                    "tests/python/make_grad_golden.py, checked by tests/python/test_grad_golden.py",
           "torch": torch.__version__, "ops": ops}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=0))
    print(f"make_grad_golden: {len(ops)} ops -> {args.out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
