#!/usr/bin/env python3
"""Runs the hostile-input corpus: every tests/hostile/cases/*.sh (or the cases named on the command line).

Each case is a bash script run with cwd = a fresh empty temp dir and the environment EMMYC, EMMY_SRC,
WORK, EMMY_CACHE_DIR, EMMY_STDLIB, PYTHON, EMMY_LIB (and PYTHONPATH with python/, TMPDIR = WORK). Its header comments say what it must do:
  # expect-exit: N        (required; 0, 1 or 2)
  # expect-output: REGEX  (optional, repeatable; must be found in stdout+stderr)
  # reject-output: REGEX  (optional, repeatable; must not be found)
A signal (returncode < 0 or >= 128), a timeout (10 s), a wrong exit status or a failed regex fails the
case. Prints one line per case with its time and a summary; exits 1 if any case failed.

usage: run_hostile.py --emmyc PATH --root SRC [--libemmy PATH] [--python PATH] [--timeout S] [-j N] [CASE...]
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HEADER = re.compile(r"^#\s*(expect-exit|expect-output|reject-output):\s?(.*)$")


def parse_header(path):
    """The case's expectations from its leading comment lines: (exit status or None, [expect], [reject], errors)."""
    expect_exit, expect, reject, errors = None, [], [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.startswith("#"):
                if line.strip():
                    break
                continue
            m = HEADER.match(line)
            if not m:
                continue
            key, value = m.group(1), m.group(2).strip()
            if key == "expect-exit":
                if value not in ("0", "1", "2"):
                    errors.append(f"expect-exit must be 0, 1 or 2, not '{value}'")
                else:
                    expect_exit = int(value)
                continue
            try:
                (expect if key == "expect-output" else reject).append(re.compile(value))
            except re.error as e:
                errors.append(f"bad {key} regex '{value}': {e}")
    if expect_exit is None and not errors:
        errors.append("no '# expect-exit: N' header")
    return expect_exit, expect, reject, errors


def case_env(args, work):
    env = dict(os.environ)
    env.pop("EMMY_KNOBS", None)
    python_path = os.path.join(args.root, "python")
    env.update({
        "EMMYC": args.emmyc,
        "EMMY_SRC": args.root,
        "WORK": work,
        "EMMY_CACHE_DIR": os.path.join(work, "cache"),
        "EMMY_STDLIB": os.path.join(args.root, "stdlib"),
        "PYTHON": args.python,
        "PYTHONPATH": python_path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
        "EMMY_LIB": args.libemmy or "",
        "EMMY_LIBRARY": args.libemmy or "",
        "TMPDIR": work,
    })
    return env


def run_case(args, path):
    """Runs one case; returns (name, ok, seconds, reasons, output)."""
    name = os.path.basename(path)
    expect_exit, expect, reject, errors = parse_header(path)
    if errors:
        return name, False, 0.0, errors, ""
    work = tempfile.mkdtemp(prefix="emmy-hostile-")
    start = time.monotonic()
    reasons = []
    output = ""
    try:
        proc = subprocess.Popen(["bash", os.path.abspath(path)], cwd=work, env=case_env(args, work),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            raw, _ = proc.communicate(timeout=args.timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            raw, _ = proc.communicate()
            code = None
            reasons.append(f"timed out after {args.timeout:g} s")
        output = raw.decode("utf-8", errors="replace")
        if code is not None:
            if code < 0 or code >= 128:
                reasons.append(f"killed by a signal (exit status {code})")
            elif code != expect_exit:
                reasons.append(f"exit status {code}, expected {expect_exit}")
        for rx in expect:
            if not rx.search(output):
                reasons.append(f"output lacks /{rx.pattern}/")
        for rx in reject:
            m = rx.search(output)
            if m:
                reasons.append(f"output has /{rx.pattern}/: '{m.group(0)}'")
    finally:
        seconds = time.monotonic() - start
        # A case may leave read-only files or directories behind (a read-only disk, say).
        for dirpath, dirnames, _ in os.walk(work):
            for d in dirnames:
                try:
                    os.chmod(os.path.join(dirpath, d), 0o755)
                except OSError:
                    pass
        shutil.rmtree(work, ignore_errors=True)
    return name, not reasons, seconds, reasons, output


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--emmyc", required=True)
    p.add_argument("--root", required=True, help="the repository's source root")
    p.add_argument("--libemmy", default="", help="path of libemmy.so (for the Python cases)")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("-v", "--verbose", action="store_true", help="print the output of every case, not only failed ones")
    p.add_argument("cases", nargs="*", help="case scripts or names (default: every tests/hostile/cases/*.sh)")
    args = p.parse_args()
    args.emmyc = os.path.abspath(args.emmyc)
    args.root = os.path.abspath(args.root)
    if args.libemmy:
        args.libemmy = os.path.abspath(args.libemmy)

    case_dir = os.path.join(args.root, "tests", "hostile", "cases")
    if args.cases:
        paths = []
        for c in args.cases:
            if os.path.exists(c):
                paths.append(os.path.abspath(c))
            else:
                paths.append(os.path.join(case_dir, c if c.endswith(".sh") else c + ".sh"))
        missing = [c for c in paths if not os.path.isfile(c)]
        if missing:
            print("run_hostile: no such case: " + ", ".join(missing), file=sys.stderr)
            return 2
    else:
        paths = sorted(os.path.join(case_dir, n) for n in os.listdir(case_dir) if n.endswith(".sh"))
    if not paths:
        print("run_hostile: no cases", file=sys.stderr)
        return 1

    failed = []
    total_start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_case, args, path) for path in paths]
        for fut in concurrent.futures.as_completed(futures):
            name, ok, seconds, reasons, output = fut.result()
            print(f"{'PASS' if ok else 'FAIL'}  {seconds:6.2f} s  {name}" + ("" if ok else ": " + "; ".join(reasons)),
                  flush=True)
            if not ok or args.verbose:
                tail = output[-4000:]
                if tail:
                    print("\n".join("    | " + line for line in tail.rstrip("\n").split("\n")), flush=True)
            if not ok:
                failed.append(name)
    elapsed = time.monotonic() - total_start
    print(f"{len(paths) - len(failed)} passed, {len(failed)} failed of {len(paths)} cases in {elapsed:.1f} s")
    if failed:
        print("failed: " + ", ".join(sorted(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
