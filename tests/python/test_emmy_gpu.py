#!/usr/bin/env python3
"""On the GPU machine: an Emmy op called from Python on torch CUDA tensors returns the same
values as the same op run by emmyc. emmyc runs the op on seeded random inputs and saves inputs
and outputs (--save DIR, .npy); this test loads those inputs into torch tensors, calls the op
through the Python module (libemmy, the same kernels from the same kernel cache) and requires
every output element to equal emmyc's exactly.

usage: EMMY_LIBRARY=gpu-carry/libemmy.so PYTHONPATH=python python3 tests/python/test_emmy_gpu.py EMMYC
Skips (exit 77) without torch or a CUDA device.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# (file, op, schedule or None, shape): row ops, a two-output op and attention, ragged sizes.
CASES = [
    ("stdlib/nn.emmy", "softmax", None, "N=1000,C=777"),
    ("stdlib/nn.emmy", "rmsnorm", None, "N=513,C=4097"),
    ("stdlib/nn.emmy", "layernorm", None, "N=300,C=1000"),
    ("stdlib/nn.emmy", "sdpa", "fa1-scalar", "B=1,H=4,S=1000,T=777,D=64,E=64"),
    ("stdlib/nn.emmy", "sdpa", "scalar-baseline", "B=2,H=2,S=257,T=129,D=64,E=64"),
    ("stdlib/linalg.emmy", "matmul", None, "M=1000,N=777,K=1023"),
    # The defaults of guarded blocks (docs/language.md): head dims 128 and 256, matmul's 128 x 192.
    ("stdlib/nn.emmy", "sdpa", None, "B=1,H=4,S=300,T=257,D=128,E=128"),
    ("stdlib/nn.emmy", "sdpa", None, "B=1,H=2,S=200,T=170,D=256,E=200"),
    ("stdlib/linalg.emmy", "matmul", None, "M=1536,N=1500,K=200"),
]


def main():
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"test_emmy_gpu: SKIPPED: {e}")
        return 77
    if not torch.cuda.is_available():
        print("test_emmy_gpu: SKIPPED: no CUDA device")
        return 77
    import emmy
    emmyc = sys.argv[1]
    failures = 0
    for file, opname, schedule, shape in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [emmyc, "run", str(ROOT / file), "--op", opname, "--shape", shape, "--save", tmp, "--check", "none"]
            if schedule:
                cmd += ["--schedule", schedule]
            subprocess.run(cmd, check=True, capture_output=True)
            op = emmy.load(str(ROOT / file), schedule=schedule).op(opname)
            inputs = [torch.from_numpy(np.load(Path(tmp) / f"{spec.name}.npy")).cuda() for spec in op.inputs]
            # Outputs NaN-filled (integers 0x7f..): an element the kernels never write differs.
            shapes = op._output_shapes([(t.data_ptr(), spec.dtype, tuple(t.shape)) for spec, t in zip(op.inputs, inputs)])
            given = [torch.empty(shape, dtype=emmy._torch_dtype(torch, spec.dtype), device="cuda")
                     for spec, shape in zip(op.outputs, shapes)]
            for t in given:
                t.fill_(float("nan") if t.is_floating_point() else torch.iinfo(t.dtype).max)
            outs = op(*inputs, out=given)
            outs = outs if isinstance(outs, tuple) else (outs,)
            torch.cuda.synchronize()
            for spec, got in zip(op.outputs, outs):
                want = torch.from_numpy(np.load(Path(tmp) / f"{spec.name}.npy"))
                got = got.cpu()
                # bf16 is saved as float32 (exact), so converting back is exact too.
                same = got.shape == want.shape and torch.equal(got, want.to(got.dtype))
                diff = (got.double() - want.double()).abs().max().item() if got.shape == want.shape else float("nan")
                print(f"{opname:<10} {schedule or 'default':<16} {shape:<32} {spec.name:<6} {tuple(got.shape)} "
                      f"{'equal' if same else 'DIFFERENT'} (max |diff| {diff:.3g})")
                failures += not same
    print(f"test_emmy_gpu: {'FAILED' if failures else 'ok'} ({failures} outputs differ)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
