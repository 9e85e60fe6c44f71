#!/usr/bin/env python3
"""Why the long rows with weights trail the copy ceiling at C = 50257 (issue 26, item 5): Emmy's
emitted softmax, layernorm and rmsnorm kernels (the auto-schedule, specialized; f16 and f32) at
(8192, 50256) and (8192, 50257), or with --short at (4097, 1000) beside Inductor, timed as emitted
and edited by text, launched by CuPy in one process beside a copy. The edits (each applied where
the kernel has what it edits; RESULTS.md, 2026-12-07, says what each measured):

- no_clobber: the 16-byte global store's inline asm without its "memory" clobber;
- hoisted: the peeled path's weight reads issued first and together, realigned by a funnel shift;
- pipelined: the last chunk loop's global 16-byte loads issued one iteration ahead;
- progressive: the row copy committed a group a chunk, the first pass waiting for each chunk's own;
- edges_cached: the peeled path's edges read from the row cache (since 92a2e3f what Emmy emits);
- double_buffered: one CTA an SM walking the rows with two row caches;
- weights_first (--short): a register row cache's weights loaded with the row, before the passes;
- narrow: 32-bit index arithmetic (no longer among the forms: within 1% either way, RESULTS.md
  2026-12-07); with --short --lib, the op through libemmy's bound launch;
- commutative_lanes (--short): the lane combines without the lo/hi selects (every combine: for a
  float max this changes which zero a row of +0 and -0 gets; since a4f3e44 Emmy drops them where
  the combine is the same bits either way round, algebra::combine_symmetric);
- exp_kept (--short): softmax's exps computed once, by the sum pass, kept in registers for the
  store (since a4f3e44 what Emmy emits under r<R>);
- x_streamed (--short, --rows): the row's 16-byte loads of x as ld.global.cs (__ldcs: evict first, as
  Inductor's loads of what it reads once), y_streamed: the 16-byte stores as st.global.cs, and
  no_clobber (the store's asm without its "memory" clobber).
--rows N,C (repeatable) times these shapes with Inductor instead of --short's (4097, 1000);
--knobs OP=KNOBS emits OP under these knobs instead of its auto-schedule, and --min-blocks 3,4 adds
forms whose __launch_bounds__ ask ptxas for that many CTAs an SM (fewer registers a thread).
With --profile nothing is timed: each form runs 3 times and once between cudaProfilerStart and Stop
(step11_short_rows.sh runs it under ncu --profile-from-start off).
hoisted and pipelined edit one chunk loop: on kernels whose peeled weights are one loop a shift
(dc8f041 on) they are left out.

    python3 tests/bench/rows_weights_probe.py --emmyc gpu-carry/emmyc [--dtypes f16] > $OUT/probe.txt
    python3 tests/bench/rows_weights_probe.py --emmyc gpu-carry/emmyc --short --lib gpu-carry/libemmy.so

Timing: fold_variants.timed (a 256 MB L2 flush before each launch, CUDA events, the median of
--reps). Every output is NaN-filled first and compared with a float64 reference."""
import argparse
import re
import subprocess
import sys
from pathlib import Path

import cupy
import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from fold_variants import timed  # noqa: E402

REALIGN = r"""
#include <cuda_fp16.h>
// out[i] = (l:h)[s + i] for the eight halves of two aligned 16-byte vectors, s uniform in 0..7.
__device__ __forceinline__ void emmy_realign8(__half* out, uint4 l, uint4 h, int s) {
  unsigned w[8] = {l.x, l.y, l.z, l.w, h.x, h.y, h.z, h.w};
  union { unsigned u[4]; __half e[8]; } o;
  unsigned r = (unsigned)(s & 1) * 16u;
  switch (s >> 1) {
#define EMMY_Q(q) case q: _Pragma("unroll") for (int j = 0; j < 4; ++j) o.u[j] = __funnelshift_r(w[j + q], w[j + q + 1], r); break;
    EMMY_Q(0) EMMY_Q(1) EMMY_Q(2) default: EMMY_Q(3)
#undef EMMY_Q
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) out[j] = o.e[j];
}
// out[i] = (l:h)[s + i] for the four floats of two aligned 16-byte vectors, s uniform in 0..3.
__device__ __forceinline__ void emmy_realign4(float* out, uint4 l, uint4 h, int s) {
  unsigned w[8] = {l.x, l.y, l.z, l.w, h.x, h.y, h.z, h.w};
  switch (s) {
#define EMMY_Q(q) case q: _Pragma("unroll") for (int j = 0; j < 4; ++j) out[j] = __uint_as_float(w[j + q]); break;
    EMMY_Q(0) EMMY_Q(1) EMMY_Q(2) default: EMMY_Q(3)
#undef EMMY_Q
  }
}
"""


def emitted(emmyc, op, n, c, dt, knobs=None):
    args = [emmyc, "compile", str(ROOT / "stdlib/nn.emmy"), "--op", op, "--target", "sm_90a", "--ir", "cuda",
            "--shape", f"N={n},C={c}", "--specialize", "--dtype", dt] + (["--knobs", knobs] if knobs else [])
    src = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    name = re.search(r"__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(", src).group(1)
    block = int(re.search(r"__launch_bounds__\((\d+)", src).group(1))
    smem = re.search(r"emmy_dynamic_smem\[\];\s*// (\d+) bytes", src)
    rows = re.search(r"blockIdx\.x \* (\d+)LL", src)
    return src, name, block, int(smem.group(1)) if smem else 0, int(rows.group(1)) if rows else 1


def no_clobber(src):
    return src.replace('"r"(vec_.w.w) : "memory");', '"r"(vec_.w.w));')


def x_streamed(src):
    out, k = re.subn(r"\*reinterpret_cast<const (uint4|uint2|unsigned)\*>\(&x\[([^\]]*)\]\)",
                     r"__ldcs(reinterpret_cast<const \1*>(&x[\2]))", src)
    return out if k else None


def y_streamed(src):
    out = src.replace('asm volatile("st.global.v4.b32', 'asm volatile("st.global.cs.v4.b32')
    return out if out != src else None


def min_blocks(src, k):
    out, n = re.subn(r"__launch_bounds__\((\d+), \d+\)", rf"__launch_bounds__(\1, {k})", src, count=1)
    return out if n and out != src else None


def unswitched(src):
    """Whether the kernel's peeled weights are one loop a shift (dc8f041): the edits of one chunk
    loop (hoisted, pipelined) would reach only one of its loops."""
    return re.search(r"int shift_\d+ = ", src) is not None


def hoisted(src):
    """The peeled path's weight reads: all loads first, then one funnel-shift realignment."""
    if unswitched(src):
        return None
    start = src.find("__half ra_")
    start = start if start >= 0 else src.find("float ra_")
    if start < 0:
        return None
    end = src.find(" w_y_", start)
    end = src.rfind("\n", start, end) + 1
    region = src[start:end]
    indent = src[src.rfind("\n", 0, start) + 1:start]
    weights = re.findall(r"(__half|float) (ra_(\w+?)_\d+)\[(\d+)\];", region)
    v = int(weights[0][3])
    lo, hi = f"rc_c - rc_c % {v}LL", f"min(rc_c - rc_c % {v}LL + {v}LL, C / {v}LL * {v}LL - {v}LL)"
    lines = []
    for ty, arr, t, _ in weights:
        lines.append(f"uint4 l_{t} = *reinterpret_cast<const uint4*>(&{t}[{lo}]);")
        lines.append(f"uint4 h_{t} = *reinterpret_cast<const uint4*>(&{t}[{hi}]);")
    for ty, arr, t, _ in weights:
        lines.append(f"{ty} {arr}[{v}];")
    lines.append(f"if (rc_c % {v}LL == 0LL || rc_c - rc_c % {v}LL + {2 * v}LL <= C) {{")
    for ty, arr, t, _ in weights:
        lines.append(f"    emmy_realign{v}({arr}, l_{t}, h_{t}, (int)(rc_c % {v}LL));")
    lines.append("} else {")
    for ty, arr, t, _ in weights:
        for e in range(v):
            lines.append(f"    {arr}[{e}] = {t}[rc_c + {e}LL];")
    lines.append("}")
    body = ("\n" + indent).join(lines) + "\n"
    out = src[:start] + body + src[end:]
    return out.replace('extern "C" __global__', REALIGN + 'extern "C" __global__', 1)


def pipelined(src):
    """The last chunk loop's global 16-byte loads issued one iteration ahead (a register each)."""
    if unswitched(src):
        return None
    loops = list(re.finditer(r"for \(long long rc_c = (.+?); rc_c < (.+?); rc_c \+= (\d+)\) \{", src))
    if not loops:
        return None
    m = loops[-1]
    first, bound, step = m.groups()
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        i += 1
    body = src[m.end():i - 1]
    indent = src[src.rfind("\n", 0, m.start()) + 1:m.start()]
    pat = re.compile(r"\*reinterpret_cast<const uint4\*>\(&(?!rc_)(\w+)\[([^\]]+)\]\)")
    loads = pat.findall(body)
    if not loads:
        return None
    at = lambda e, c: re.sub(r"\brc_c\b", f"({c})", e)
    pre, head = [], []
    for k, (t, e) in enumerate(loads):
        pre.append(f"uint4 pf_{k} = make_uint4(0u, 0u, 0u, 0u);")
        pre.append(f"if (({first}) < ({bound})) pf_{k} = *reinterpret_cast<const uint4*>(&{t}[{at(e, first)}]);")
        head.append(f"uint4 cur_{k} = pf_{k};")
    head.append(f"if (rc_c + {step} < ({bound})) {{")
    for k, (t, e) in enumerate(loads):
        head.append(f"    pf_{k} = *reinterpret_cast<const uint4*>(&{t}[{at(e, f'rc_c + {step}')}]);")
    head.append("}")
    count = iter(range(len(loads)))
    body = pat.sub(lambda mm: f"cur_{next(count)}", body)
    inner = indent + "    "
    return (src[:m.start()] + ("\n" + indent).join(pre) + "\n" + indent + src[m.start():m.end()] + "\n" + inner
            + ("\n" + inner).join(head) + body + src[i - 1:])


def progressive(src):
    """The row copy committed a group a chunk, and the first pass waits for each chunk's own group
    (the thread that copied it reads it) instead of the whole row behind a barrier."""
    cp = re.search(r"for \(long long (pf_c_\d+) = (.+?); \1 < (.+?); \1 \+= (\d+)\) \{\n(\s*)emmy_cp_async_16\(.+?\);\n", src)
    if not cp:
        return None
    var, first, end, step, ind = cp.groups()
    out = src[:cp.end()] + ind + "emmy_cp_async_commit();\n" + src[cp.end():]
    out = out.replace("emmy_cp_async_commit();\n" + re.search(r"\n(\s*)emmy_cp_async_wait\(0\);", out).group(1)
                      + "emmy_cp_async_wait(0);\n", "emmy_cp_async_commit();\n", 1)
    loop = re.compile(r"for \(long long rc_c = (.+?); rc_c < (.+?); rc_c \+= (\d+)\) \{\n").search(out, cp.end())
    if not loop:
        return None
    groups = f"(({end}) > ({first}) ? (({end}) - ({first}) + {int(step) - 1}LL) / {step}LL : 0LL)"
    wait = (f"{{ long long left_ = {groups} - 1LL - (rc_c - ({loop.group(1)})) / {loop.group(3)}LL; "
            f"emmy_cp_async_wait((int)min(max(left_, 0LL), 7LL)); }}\n")
    return out[:loop.end()] + ind + "    " + wait + out[loop.end():]


def edges_cached(src):
    """The peeled path's edge elements read from the row cache (the copy put them there) instead
    of from global memory in every pass."""
    cp = re.search(r"(rc_\w+)\[\(int\)\(0LL \* \d+LL \+ \((pf_off_\d+) \+ pf_c_\d+\)\)\] = x\[", src)
    if not cp:
        return None
    rc, off = cp.groups()
    head, tail = src[:cp.end()], src[cp.end():]
    tail, k = re.subn(r"\bx\[n \* C \+ (c_\d+)\]", rf"{rc}[(int)({off} + \1)]", tail)
    return head + tail if k else None


def weights_first(src):
    """A register row cache's last pass: the weights' chunks (1-D inputs read at the row's chunk
    positions) loaded at the top, right after the row's own chunks, instead of in the last pass
    after the reductions (each behind the previous chunk's guard and store)."""
    first = re.search(r"\n(\s*)if \((rc_c_\d+) < C\) \{\n\s*(?:__half|float) term_", src)
    last = src.rfind("// for every c < C")
    if not first or last < 0:
        return None
    pos = {v: e for v, e in re.findall(r"long long (rc_c_\d+) = (.+?);", src[last:])}
    blk = re.compile(r"\n(\s*)((?:__half|float) (r_(?!x_)\w+?_\d+)\[\d+\];)\n\s*(\{ union \{ uint4 w; .+?vec_\.w = "
                     r"\*reinterpret_cast<const uint4\*>\(&\w+\[(rc_c_\d+)\]\);.+?\})\n")
    moved, tail = [], src[last:]
    for m in list(blk.finditer(tail)):
        decl, arr, load, v = m.group(2), m.group(3), m.group(4), m.group(5)
        moved.append(f"{decl}\n{first.group(1)}if (({pos[v]}) < C) {{\n{first.group(1)}    "
                     + re.sub(rf"\b{v}\b", f"({pos[v]})", load) + f"\n{first.group(1)}}}")
        tail = tail.replace(m.group(0), "\n", 1)
    if not moved:
        return None
    at = first.start() + 1
    ind = first.group(1)
    return src[:at] + "".join(f"{ind}{t}\n" for t in moved) + src[at:last] + tail


def commutative_lanes(src):
    """The lane combines of a commutative combine without the lo/hi selects (each lane takes its
    own value first: a + b and max(a, b) are the same either way round)."""
    out, k = re.subn(r"(\w+) (lo_x_\d+) = (low_\d+) \? (\w+) : (\w+);\n(\s*)(\w+) (hi_x_\d+) = \3 \? \5 : \4;",
                     r"\1 \2 = \4;\n\6\7 \8 = \5;", src)
    return out if k else None


def exp_kept(src):
    """softmax: the sum pass's exp of each kept element held in a register for the store pass
    instead of computed again there."""
    pat = re.compile(r"emmy_ex2_ftz\(\((?:__half2float\()?rk_x_(\d+)\[(\d+)\]\)?\s*-\s*t_\d+\) \* 1\.442695f\)")
    seen, decls = set(), []

    def sub(m):
        key = f"ek_{m.group(1)}_{m.group(2)}"
        if key in seen:
            return key
        seen.add(key)
        decls.append(key)
        return f"({key} = {m.group(0)})"
    out = pat.sub(sub, src)
    if not decls:
        return None
    at = re.search(r"\n(\s*)(?:__half|float) rk_x_\d+\[\d+\];", out)
    return out[:at.start()] + f"\n{at.group(1)}float " + ", ".join(decls) + ";" + out[at.start():]


def narrow(src):
    """32-bit index arithmetic throughout (every index of these shapes fits)."""
    return re.sub(r"(\d)LL\b", r"\1", src.replace("long long", "int"))


def double_buffered(src, sms):
    """One CTA an SM walks the rows (rows blockIdx.x, + gridDim.x, ...) with two row caches: the
    next row's copy (cp.async) issued before this row's passes, so that the copy of one row
    always runs under the passes of another, instead of two CTAs an SM in phase."""
    total = re.search(r"emmy_dynamic_smem\[\];\s*// (\d+) bytes", src)
    rc = re.search(r"__half\* const (rc_x_\d+) = reinterpret_cast<__half\*>\(emmy_dynamic_smem \+ \d+\);\s*// \[(\d+)\]", src) or \
        re.search(r"float\* const (rc_x_\d+) = reinterpret_cast<float\*>\(emmy_dynamic_smem \+ \d+\);\s*// \[(\d+)\]", src)
    cp0 = src.find("long long pf_off_")
    cp1 = src.find("emmy_cp_async_commit();", cp0)
    if not (total and rc and cp0 > 0 and cp1 > 0):
        return None
    ty = "__half" if rc.group(0).startswith("__half") else "float"
    name, cap = rc.group(1), int(rc.group(2))
    smem = (int(total.group(1)) + 15) // 16 * 16
    copy = src[cp0:cp1]
    decls = "\n".join(l for l in copy[:copy.find("for (")].splitlines() if l.strip().startswith("long long pf_"))
    threads = re.search(r"long long coop_rank = coop_tid % (\d+)LL;", src).group(1)
    wait = re.compile(r"emmy_cp_async_commit\(\);\s*emmy_cp_async_wait\(0\);\s*__syncthreads\(\);")
    row0 = src.find("long long coop_row = ")
    body0 = src.find("\n", src.find("long long n = coop_rowc;")) + 1
    end = src.rstrip().rfind("}")
    lam = (f"long long coop_rank = coop_tid % {threads}LL;\n"
           f"auto copy_row = [&](long long n, {ty}* {name}) {{\n" + copy + "};\n"
           f"{ty}* const buf1_ = reinterpret_cast<{ty}*>(emmy_dynamic_smem + {smem});\n"
           f"if ((long long)blockIdx.x < N) copy_row((long long)blockIdx.x, {name});\n"
           "emmy_cp_async_commit();\n"
           "for (long long unit_ = blockIdx.x, w_ = 0; unit_ < N; unit_ += gridDim.x, ++w_) {\n"
           f"{ty}* const cur_ = (w_ & 1) ? buf1_ : {name};\n"
           f"if (unit_ + gridDim.x < N) copy_row(unit_ + gridDim.x, (w_ & 1) ? {name} : buf1_);\n"
           "emmy_cp_async_commit();\n"
           "emmy_cp_async_wait(1);\n"
           "__syncthreads();\n")
    head = src[:row0].replace(f"// {total.group(1)} bytes", f"// {smem + cap * (2 if ty == '__half' else 4)} bytes")
    rows = src[row0:body0].replace("(long long)blockIdx.x * 1LL", "unit_")
    body = src[body0:end]
    body = body.replace(copy, decls + "\n", 1)
    body = wait.sub("", body, count=1)
    body = re.sub(rf"\b{name}\[", "cur_[", body)
    return head + lam + rows + body + "__syncthreads();\n}\n" + src[end:], smem + cap * (2 if ty == "__half" else 4), sms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--emmyc", required=True)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--lib", default=None, help="libemmy.so: the op through the library beside the raw kernels (--short)")
    ap.add_argument("--dtypes", default="f16,f32")
    ap.add_argument("--short", action="store_true", help="the short rows (4097, 1000) with Inductor, not the long ones")
    ap.add_argument("--rows", action="append", default=[], help="N,C: a shape timed with Inductor (repeatable; "
                    "instead of --short's (4097, 1000))")
    ap.add_argument("--knobs", action="append", default=[], help="OP=KNOBS: OP emitted under these knobs")
    ap.add_argument("--no-inductor", action="store_true", help="leave Inductor out (--short, --rows)")
    ap.add_argument("--min-blocks", default="", help="e.g. 3,4: forms asking ptxas for that many CTAs an SM")
    ap.add_argument("--profile", action="store_true", help="no timing: each form launched 3 times, then once "
                    "between cudaProfilerStart and Stop (run under ncu --profile-from-start off)")
    a = ap.parse_args()
    shapes = [tuple(int(v) for v in r.split(",")) for r in a.rows]
    a.short = a.short or bool(shapes)
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for dt, tdt in [(d, t) for d, t in (("f16", torch.float16), ("f32", torch.float32)) if d in a.dtypes.split(",")]:
        for n, c in shapes or (((4097, 1000),) if a.short else ((8192, 50256), (8192, 50257))):
            run_shape(a, n, c, dt, tdt)


def library_form(a, op, dt, inputs, ref, gb, copy_us):
    """The same op through libemmy (python/emmy's bound launch, as the harness times it)."""
    sys.path.insert(0, str(ROOT / "python"))
    import emmy
    emmy.load_library(a.lib)
    prog = emmy.load(str(ROOT / "stdlib/nn.emmy"), target="sm_90a", stdlib_path=str(ROOT / "stdlib"),
                     **({"dtype": "f32"} if dt == "f32" else {}))
    o = prog.op(op)
    launch = o.bind(*inputs)
    y = launch.outputs[0] if isinstance(launch.outputs, (list, tuple)) else launch.outputs
    y.fill_(float("nan"))
    launch()
    torch.cuda.synchronize()
    err = (y.double() - ref).abs().max().item()
    us = timed(torch, launch, a.reps)
    n, c = inputs[0].shape
    print(f"{op:10s} {n}x{c} {dt}  {'libemmy ' + o.knobs_at(*(t.shape for t in inputs))[:16]:24s} {us:9.1f} us  "
          f"{gb / us * 1e3:6.3f} TB/s  {copy_us / us:5.3f} of copy  err {err:.2e}", flush=True)


def inductor(op, dt):
    """Inductor's kernel of `op`, compiled for static shapes (dynamic=False): with --rows over two
    shapes in one process, Inductor's times here were 3-6x the harness's (29.2 against 10 us at
    (4097, 1000), 2026-12-07), likely shape-generic kernels after automatic dynamic shapes."""
    import torch.nn.functional as F
    from functools import partial
    compile = partial(torch.compile, dynamic=False)  # noqa: A001
    if op == "softmax":
        return compile(lambda x, g, b: torch.softmax(x.float(), -1).to(x.dtype))
    if op == "rmsnorm":
        return compile(lambda x, g, b: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
                                              * g.float()).to(x.dtype))
    return compile(lambda x, g, b: F.layer_norm(x.float(), (x.shape[-1],), g.float(), b.float(), 1e-5).to(x.dtype))


def profiled(a, launch, label):
    """The median time of `launch`, or under --profile 3 launches and one between the profiler's
    start and stop (its label on stderr, in ncu's order) and 0."""
    if not a.profile:
        return timed(torch, launch, a.reps)
    for _ in range(3):
        launch()
    torch.cuda.synchronize()
    print(f"profiled: {label}", file=sys.stderr, flush=True)
    torch.cuda.cudart().cudaProfilerStart()
    launch()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return float("nan")


def run_shape(a, n, c, dt, tdt):
    x = torch.randn(n, c, device="cuda", dtype=tdt)
    g = torch.randn(c, device="cuda", dtype=tdt)
    b = torch.randn(c, device="cuda", dtype=tdt)
    y = torch.empty_like(x)
    copy_us = timed(torch, lambda: y.copy_(x), a.reps)
    gb = 2 * x.numel() * x.element_size() / 1e9
    print(f"copy       {n}x{c} {dt}  {copy_us:9.1f} us  {gb / copy_us * 1e3:6.3f} TB/s", flush=True)
    xd = x.double()
    for op in ("softmax", "rmsnorm", "layernorm"):
        if op == "softmax":
            ref = torch.softmax(xd, -1)
        elif op == "rmsnorm":
            ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * g.double()
        else:
            mu = xd.mean(-1, keepdim=True)
            ref = (xd - mu) * torch.rsqrt((xd - mu).pow(2).mean(-1, keepdim=True) + 1e-5) * g.double() + b.double()
        if a.short and not a.no_inductor:
            f = inductor(op, dt)
            us = profiled(a, lambda: f(x, g, b), f"{op} {dt} Inductor")
            print(f"{op:10s} {n}x{c} {dt}  {'torch.compile (Inductor)':24s} {us:9.1f} us  {gb / us * 1e3:6.3f} TB/s", flush=True)
        knobs = dict(k.split("=", 1) for k in a.knobs).get(op)
        src, name, block, smem, rows = emitted(a.emmyc, op, n, c, dt, knobs)
        mean = torch.empty(n, device="cuda", dtype=torch.float32)
        rstd = torch.empty(n, device="cuda", dtype=torch.float32)
        cx, cg, cb, cy = (cupy.from_dlpack(t) for t in (x, g, b, y))
        args = (cx, cy) if op == "softmax" else (cx, cg, cy) if op == "rmsnorm" else (cx, cg, cb, cy, cupy.from_dlpack(mean), cupy.from_dlpack(rstd))
        forms = [("as emitted", src)]
        if a.short:
            w = weights_first(src)
            forms += [("lanes commutative", commutative_lanes(src))]
            e = exp_kept(src)
            if e:
                forms += [("exp kept", e), ("exp kept, lanes comm.", commutative_lanes(e))]
            forms += [("weights first", w), ("weights first, lanes comm.", commutative_lanes(w))] if w else []
            forms += [(f"min blocks {k}", min_blocks(src, k)) for k in a.min_blocks.split(",") if k]
            forms += [("x evict-first (ld.cs)", x_streamed(src)), ("y streamed (st.cs)", y_streamed(src)),
                      ("no clobber", no_clobber(src))]
        if not a.short:  # each edit where the kernel has what it edits (None: it has not)
            h = hoisted(src)
            for tag, form in (("no clobber", no_clobber(src)), ("hoisted", h), ("pipelined", pipelined(h or src)),
                              ("progressive", progressive(src)), ("edges cached", edges_cached(src))):
                if form is not None and form != src:
                    forms.append((tag, form))
        if a.short and a.lib:
            library_form(a, op, dt, (x,) if op == "softmax" else (x, g) if op == "rmsnorm" else (x, g, b), ref, gb, copy_us)
        grid = (n + rows - 1) // rows
        forms = [(t, f, grid, smem) for t, f in forms]
        if not a.short:
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            d = double_buffered(src, sms)
            if d and d[1] <= 227 * 1024:
                forms.append(("double-buffered walk", d[0], sms, d[1]))
        for tag, s, grid, smem in forms:
            if s is None:
                print(f"{op:10s} {n}x{c} {dt}  {tag:24s} (no such form)", flush=True)
                continue
            opts = ("-std=c++17", "-default-device") if "default-device" in tag else ("-std=c++17",)
            fn = cupy.RawModule(code=s, options=opts).get_function(name)
            fn.max_dynamic_shared_size_bytes = smem

            isz = np.int32 if "i32" in tag else np.int64

            def launch(fn=fn, isz=isz, grid=grid, smem=smem):
                fn((grid,), (block,), args + (isz(n), isz(c)), shared_mem=smem)
            y.fill_(float("nan"))
            launch()
            torch.cuda.synchronize()
            err = (y.double() - ref).abs().max().item()
            us = profiled(a, launch, f"{op} {dt} {tag}")
            print(f"{op:10s} {n}x{c} {dt}  {tag:24s} {us:9.1f} us  {gb / us * 1e3:6.3f} TB/s  "
                  f"{copy_us / us:5.3f} of copy  err {err:.2e}", flush=True)

if __name__ == "__main__":
    main()
