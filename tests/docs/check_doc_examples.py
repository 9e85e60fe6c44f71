#!/usr/bin/env python3
"""Checks the code blocks of the documentation: every example in the docs must still work.

    python3 tests/docs/check_doc_examples.py --emmyc build/emmyc --root . [--libemmy build/libemmy.so]

It reads README.md, docs/*.md and examples/*.md, finds the fenced code blocks and acts on
them by their info string (the word after the opening ```):

  emmy                   a complete .emmy file: `emmyc check` must accept it without any
  emmy example           diagnostic (exit 0, nothing on stderr, warnings included)
  emmy example-error     a file that `emmyc check` must reject (exit 1); codes written after
  emmy example-error E023 E021   the marker must each appear as error[CODE]
  emmy example-warning W001      a file `emmyc check` accepts (exit 0) with exactly these
                         warnings: each listed code appears, and no other code does
  sh example             each command is run from the root with bash (pipefail); it must
                         exit 0. `build/emmyc` in a command is replaced by --emmyc. Only
                         commands that need no GPU belong in such a block. A pipe into a
                         reader that may stop early (grep -q, head) is refused: under
                         pipefail the writer's SIGPIPE (exit 141) would fail it by timing.
  cpp example            a C++ program: compiled with --cxx against include/ and --libemmy,
                         run from the root; it must exit 0 (skipped without --libemmy)
  python example         a Python script: run from the root with python/ on the path and
                         EMMY_LIBRARY=--libemmy; it must exit 0 (skipped without --libemmy)

Every other block (```text, ```sh, ```cpp, ``` ...) is left alone: use those for fragments,
outputs and commands that need a GPU.

It also checks that examples/README.md runs every op of every examples/*.emmy file: each op
needs a command in an `sh example` block that names the file and the op (`--op NAME`, or no
--op when the file has one op) and runs it with --interp.

Failures are printed as FILE:LINE: what went wrong, with the tool's output; the last line
counts the blocks. Exit status 0 when everything passed, 1 otherwise (also when no block was
found at all), 2 on bad arguments.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# A reader that can stop before its writer has finished: under pipefail the writer then dies of SIGPIPE.
EARLY_READER = re.compile(r"\|\s*(grep\s+(-\w*q\w*|--quiet|--silent)\b|head\b)")

FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*(.*?)\s*$")


def parse_args():
    p = argparse.ArgumentParser(description="Check the code blocks of Emmy's documentation.")
    p.add_argument("--emmyc", required=True, help="the emmyc binary")
    p.add_argument("--root", required=True, help="the source tree (README.md, docs/, examples/)")
    p.add_argument("--libemmy", help="libemmy.so, for the cpp and python examples (skipped without it)")
    p.add_argument("--cxx", default=os.environ.get("CXX", "c++"), help="C++ compiler for cpp examples (default: $CXX or c++)")
    p.add_argument("--only", action="append", default=[], help="check only these markdown files (paths under --root)")
    p.add_argument("--list", action="store_true", help="list the blocks found and what would be done, then stop")
    p.add_argument("--timeout", type=float, default=300, help="seconds a single command may take")
    return p.parse_args()


def markdown_files(root, only):
    if only:
        return [os.path.join(root, f) for f in only]
    files = [os.path.join(root, "README.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    files += sorted(glob.glob(os.path.join(root, "examples", "*.md")))
    return [f for f in files if os.path.isfile(f)]


def blocks_of(path):
    """Yields (line of the opening fence, info string, text) for every fenced block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3)
        start = i + 1
        body = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group(2)[0] == fence[0] and len(close.group(2)) >= len(fence) and close.group(3) == "":
                break
            line = lines[i]
            body.append(line[indent:] if line[:indent].strip() == "" else line)
            i += 1
        i += 1
        yield start, info, "\n".join(body) + "\n"


def kind_of(info):
    words = info.split()
    if not words:
        return None, []
    lang, rest = words[0].lower(), words[1:]
    marker = rest[0] if rest else ""
    if lang == "emmy" and marker in ("", "example"):
        return "emmy", []
    if lang == "emmy" and marker == "example-error":
        return "emmy-error", rest[1:]
    if lang == "emmy" and marker == "example-warning" and len(rest) > 1:
        return "emmy-warning", rest[1:]
    if marker == "example" and lang in ("sh", "bash", "cpp", "python"):
        return {"bash": "sh"}.get(lang, lang), []
    return None, []


def commands_of(text, first_line):
    """The commands of a shell block: (line, command) with backslash continuations joined,
    comment and blank lines skipped, a leading '$ ' prompt removed."""
    out, pending, pending_line = [], "", None
    for n, line in enumerate(text.split("\n")):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("$ ") and not pending:
            stripped = stripped[2:]
        if pending_line is None:
            pending_line = first_line + 1 + n
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        out.append((pending_line, pending + stripped))
        pending, pending_line = "", None
    if pending:
        out.append((pending_line, pending))
    return out


class Checker:
    def __init__(self, args):
        self.args = args
        self.root = os.path.abspath(args.root)
        self.emmyc = os.path.abspath(args.emmyc)
        self.libemmy = os.path.abspath(args.libemmy) if args.libemmy else None
        self.env = dict(os.environ, EMMY_STDLIB=os.path.join(self.root, "stdlib"))
        self.env.pop("EMMY_KNOBS", None)
        self.env.pop("EMMY_EMBED_GPU", None)
        if self.libemmy:
            self.env["EMMY_LIBRARY"] = self.libemmy
        self.env["PYTHONPATH"] = os.path.join(self.root, "python") + os.pathsep + os.environ.get("PYTHONPATH", "")
        self.counts = {}
        self.skipped = 0
        self.failures = []
        self.tmp = tempfile.mkdtemp(prefix="emmy-doc-examples-")
        self.interp_commands = []  # (where, command) of every sh example command with --interp

    def rel(self, path):
        return os.path.relpath(path, self.root)

    def fail(self, where, what, output=""):
        self.failures.append(f"{where}: {what}" + (f"\n{output.rstrip()}" if output.strip() else ""))

    def run(self, argv, **kw):
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=self.args.timeout, **kw)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 124, "", f"timed out after {self.args.timeout:.0f} s")

    def count(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def temp_file(self, md, line, suffix, text):
        base = re.sub(r"[^A-Za-z0-9_]", "_", self.rel(md))
        path = os.path.join(self.tmp, f"{base}_{line}{suffix}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    # ---- the kinds of block ---------------------------------------------------------------

    def check_emmy(self, md, line, text, where):
        path = self.temp_file(md, line, ".emmy", text)
        r = self.run([self.emmyc, "check", "--color", "never", path])
        if r.returncode != 0 or r.stderr.strip():
            self.fail(where, f"emmy example: emmyc check exited {r.returncode}" +
                      (" with diagnostics" if r.stderr.strip() else ""), r.stdout + r.stderr)

    def check_emmy_error(self, md, line, text, where, codes):
        path = self.temp_file(md, line, ".emmy", text)
        r = self.run([self.emmyc, "check", "--color", "never", path])
        if r.returncode != 1:
            self.fail(where, f"emmy example-error: emmyc check exited {r.returncode}, expected 1 (the block must be rejected)",
                      r.stdout + r.stderr)
            return
        missing = [c for c in codes if f"[{c}]" not in r.stderr]
        if missing:
            self.fail(where, f"emmy example-error: the diagnostics lack {', '.join(missing)}", r.stderr)

    def check_emmy_warning(self, md, line, text, where, codes):
        path = self.temp_file(md, line, ".emmy", text)
        r = self.run([self.emmyc, "check", "--color", "never", path])
        if r.returncode != 0:
            self.fail(where, f"emmy example-warning: emmyc check exited {r.returncode}, expected 0", r.stdout + r.stderr)
            return
        seen = set(re.findall(r"(?:warning|error)\[([EW][0-9]+)\]", r.stderr))
        if seen != set(codes):
            self.fail(where, f"emmy example-warning: expected {' '.join(sorted(codes))}, got {' '.join(sorted(seen)) or 'none'}",
                      r.stderr)

    def check_sh(self, md, line, text, where):
        for cmd_line, cmd in commands_of(text, line):
            here = f"{self.rel(md)}:{cmd_line}"
            self.count("commands")
            if "--interp" in cmd:
                self.interp_commands.append((here, cmd))
            if EARLY_READER.search(cmd):
                self.fail(here, "a pipe into grep -q or head may end its writer with SIGPIPE (exit 141 under "
                          "pipefail): use plain grep, or write the output to a file first", cmd)
                continue
            real = re.sub(r"(?<![\w/.-])build/emmyc\b", shlex.quote(self.emmyc), cmd)
            r = self.run(["bash", "-o", "pipefail", "-c", real], cwd=self.root)
            if r.returncode != 0:
                self.fail(here, f"command exited {r.returncode}: {cmd}", r.stdout[-3000:] + r.stderr[-3000:])

    def check_cpp(self, md, line, text, where):
        if not self.libemmy:
            self.skipped += 1
            self.counts["cpp"] -= 1
            return
        src = self.temp_file(md, line, ".cpp", text)
        exe = src[:-4]
        libdir = os.path.dirname(self.libemmy)
        r = self.run([self.args.cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(self.root, "include"),
                      src, self.libemmy, f"-Wl,-rpath,{libdir}", "-o", exe])
        if r.returncode != 0:
            self.fail(where, f"cpp example: {self.args.cxx} exited {r.returncode}", r.stdout + r.stderr)
            return
        r = self.run([exe], cwd=self.root)
        if r.returncode != 0:
            self.fail(where, f"cpp example: the program exited {r.returncode}", r.stdout + r.stderr)

    def check_python(self, md, line, text, where):
        if not self.libemmy:
            self.skipped += 1
            self.counts["python"] -= 1
            return
        path = self.temp_file(md, line, ".py", text)
        r = self.run([sys.executable, path], cwd=self.root)
        if r.returncode != 0:
            self.fail(where, f"python example: exited {r.returncode}", r.stdout + r.stderr)

    # ---- every op of examples/ runs on the interpreter ------------------------------------

    def check_examples_listed(self):
        readme = os.path.join(self.root, "examples", "README.md")
        if self.args.only and os.path.abspath(readme) not in [os.path.abspath(os.path.join(self.root, f)) for f in self.args.only]:
            return
        for path in sorted(glob.glob(os.path.join(self.root, "examples", "*.emmy"))):
            rel = self.rel(path)
            with open(path, encoding="utf-8") as f:
                ops = re.findall(r"^op\s+([A-Za-z_][A-Za-z0-9_]*)", f.read(), re.M)
            for op in ops:
                self.count("examples/ ops")
                found = False
                for _, cmd in self.interp_commands:
                    words = shlex.split(cmd, comments=True)
                    if rel not in words:
                        continue
                    named = words[words.index("--op") + 1] if "--op" in words[:-1] else None
                    if named == op or (named is None and len(ops) == 1):
                        found = True
                        break
                if not found:
                    self.fail("examples/README.md", f"op {op} of {rel} has no `sh example` command that runs it with "
                              f"--interp (add: build/emmyc run {rel} --op {op} --shape ... --interp)")

    # ---- driver -----------------------------------------------------------------------------

    def main(self):
        if not os.path.isfile(self.emmyc):
            print(f"check_doc_examples: emmyc not found: {self.emmyc}", file=sys.stderr)
            return 2
        for md in markdown_files(self.root, self.args.only):
            for line, info, text in blocks_of(md):
                kind, codes = kind_of(info)
                if kind is None:
                    continue
                where = f"{self.rel(md)}:{line}"
                if self.args.list:
                    print(f"{where}: {info}")
                    continue
                self.count(kind)
                if kind == "emmy":
                    self.check_emmy(md, line, text, where)
                elif kind == "emmy-error":
                    self.check_emmy_error(md, line, text, where, codes)
                elif kind == "emmy-warning":
                    self.check_emmy_warning(md, line, text, where, codes)
                elif kind == "sh":
                    self.check_sh(md, line, text, where)
                elif kind == "cpp":
                    self.check_cpp(md, line, text, where)
                elif kind == "python":
                    self.check_python(md, line, text, where)
        if self.args.list:
            return 0
        self.check_examples_listed()
        for f in self.failures:
            print("FAIL:", f)
        blocks = {k: v for k, v in self.counts.items() if k not in ("commands", "examples/ ops")}
        total = sum(blocks.values())
        parts = ", ".join(f"{v} {k}" for k, v in sorted(blocks.items()))
        print(f"checked {total} doc blocks ({parts}), running {self.counts.get('commands', 0)} commands; "
              f"{self.counts.get('examples/ ops', 0)} ops of examples/ have a command; "
              f"{self.skipped} skipped (no --libemmy); {len(self.failures)} failed")
        return 1 if self.failures or total == 0 else 0


if __name__ == "__main__":
    checker = Checker(parse_args())
    try:
        status = checker.main()
    finally:
        shutil.rmtree(checker.tmp, ignore_errors=True)
    sys.exit(status)
