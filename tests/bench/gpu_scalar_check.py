#!/usr/bin/env python3
"""Runs emmyc's scalar-tier CUDA on a real GPU and checks it against a float64 PyTorch
reference: the kernels are compiled with nvcc to CUBIN, loaded and launched through the
CUDA driver (ctypes), on PyTorch's tensors. A sanity check of the printed CUDA until the
runtime of Step 4 exists; it needs a GPU, nvcc and PyTorch.

usage: gpu_scalar_check.py DIR   (DIR holds NAME.cu and NAME.kir from emmyc compile --ir cuda|kernel)
"""
import ctypes
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
          "i64": torch.int64, "i32": torch.int32}


def parse_kir(text):
    """Buffers (name, role, type, dims) and kernels (name, block, grid expression, params) of --ir kernel."""
    buffers = [dict(zip(("name", "role", "type", "dims"), (m[0], m[1], m[2], [d.strip() for d in m[3].split(",")])))
               for m in re.findall(r"^  buffer (\w+): (\w+) (\w+)\[(.*)\]$", text, re.M)]
    kernels = []
    for m in re.finditer(r"^kernel (\w+) threads=(\d+)(?: min_blocks=\d+)? grid=(.*)$", text, re.M):
        body = text[m.end():text.find("\n{", m.end())]
        params = re.findall(r"^  param (\w+): (buffer|scalar)", body, re.M)
        kernels.append({"name": m[1], "block": int(m[2]), "grid": m[3], "params": params})
    return buffers, kernels


def eval_grid(expr, sizes):
    py = re.sub(r"(\d+)i64", r"\1", expr).replace("/", "//")
    return int(eval(py, {}, dict(sizes)))


class Driver:
    def __init__(self):
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # PyTorch makes the primary context current
        self.cu = ctypes.CDLL("libcuda.so.1")

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what} failed with CUDA error {status}")

    def load(self, cubin):
        module = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(cubin)), "cuModuleLoadData")
        return module

    def function(self, module, name):
        fn = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), f"cuModuleGetFunction {name}")
        return fn

    def launch(self, fn, grid, block, args):
        holders = [ctypes.c_uint64(a.data_ptr()) if isinstance(a, torch.Tensor) else ctypes.c_int64(a) for a in args]
        ptrs = (ctypes.c_void_p * len(holders))(*[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.check(self.cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, ptrs, None), "cuLaunchKernel")


def sdpa_reference(q, k, v):
    q, k, v = (t.double() for t in (q, k, v))
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return torch.softmax(s, dim=-1) @ v


def main():
    folder = Path(sys.argv[1])
    drv = Driver()
    results = []
    for kir in sorted(folder.glob("*.kir")):
        cu = kir.with_suffix(".cu")
        cubin = kir.with_suffix(".cubin")
        subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-o", str(cubin), str(cu)], check=True)
        buffers, kernels = parse_kir(kir.read_text())
        module = drv.load(cubin.read_bytes())
        for shape in json.loads(kir.with_suffix(".json").read_text()):
            sizes = dict(shape)
            gen = torch.Generator(device="cuda").manual_seed(1)
            tensors = {}
            for b in buffers:
                dims = [int(d) if d.isdigit() else sizes[d] for d in b["dims"]]
                if b["role"] == "input":
                    mag = torch.rand(dims, device="cuda", generator=gen) * 0.9 + 0.1
                    sign = torch.where(torch.rand(dims, device="cuda", generator=gen) < 0.5, -1.0, 1.0)
                    tensors[b["name"]] = (mag * sign).to(DTYPES[b["type"]])
                else:
                    tensors[b["name"]] = torch.full(dims, float("nan"), device="cuda", dtype=DTYPES[b["type"]])
            fns = [(drv.function(module, k["name"]), k) for k in kernels]

            def run():
                for fn, k in fns:
                    args = [tensors[n] if kind == "buffer" else sizes[n] for n, kind in k["params"]]
                    drv.launch(fn, eval_grid(k["grid"], sizes), k["block"], args)

            run()
            torch.cuda.synchronize()
            ref = sdpa_reference(tensors["q"], tensors["k"], tensors["v"])
            got = tensors["o"].double()
            rel = ((got - ref).norm() / ref.norm()).item()
            finite = bool(torch.isfinite(got).all())
            times = []
            for _ in range(5 if sizes["S"] >= 4096 else 20):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                run()
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) * 1000)
            times.sort()
            results.append({"variant": kir.stem, "shape": sizes, "kernels": len(kernels), "rel_l2": rel,
                            "finite": finite, "ok": finite and rel <= 5e-3, "median_us": times[len(times) // 2]})
            print(json.dumps(results[-1]), flush=True)
    print("ALL OK" if all(r["ok"] for r in results) else "SOME FAILED")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
