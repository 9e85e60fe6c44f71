#!/usr/bin/env python3
"""Checks every .emmy file in the repository with emmyc.

- stdlib/ and examples/: `emmyc check` is clean and `emmyc fmt --check` passes.
- every file that parses: fmt is idempotent, and the checked AST of the formatted
  text equals that of the original (fmt never changes meaning).
Prints one line per failure and a closing 'N passed, N failed' line.
"""
import os
import shutil
import subprocess
import sys
import tempfile

emmyc, root = sys.argv[1], sys.argv[2]
env = dict(os.environ, EMMY_STDLIB=os.path.join(root, "stdlib"))
env.pop("EMMY_KNOBS", None)


def run(*args, stdlib=None):
    e = dict(env, EMMY_STDLIB=stdlib) if stdlib else env
    return subprocess.run([emmyc, *args], capture_output=True, text=True, env=e)


def emmy_files():
    for top in ("stdlib", "examples", "tests", "docs"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            if "Output" in dirpath:
                continue
            for n in sorted(names):
                if n.endswith(".emmy"):
                    yield os.path.join(dirpath, n)


def ast_without_header(out):
    return out.split("\n", 1)[1] if "\n" in out else out


passed, failed = 0, 0


def result(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


files = list(emmy_files())
for path in files:
    rel = os.path.relpath(path, root)
    library = rel.startswith("stdlib/") or rel.startswith("examples/")
    if library:
        r = run("check", path)
        result(r.returncode == 0 and r.stderr == "", f"{rel}: emmyc check\n{r.stderr}")
        r = run("fmt", "--check", path)
        result(r.returncode == 0, f"{rel}: not formatted\n{r.stdout}{r.stderr}")
    once = run("fmt", path)
    if once.returncode != 0:
        continue  # does not parse (a syntax-error test)
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        with open(copy, "w") as f:
            f.write(once.stdout)
        twice = run("fmt", copy)
        result(twice.returncode == 0 and twice.stdout == once.stdout, f"{rel}: fmt is not idempotent")
        before = run("compile", path, "--ir", "ast")
        if before.returncode == 0:
            # Imports must still resolve: a stdlib module is swapped into a copy of the
            # stdlib; any other file is formatted next to the original.
            if rel.startswith("stdlib/"):
                lib = os.path.join(tmp, "stdlib")
                shutil.copytree(os.path.join(root, "stdlib"), lib)
                side = os.path.join(lib, os.path.basename(path))
                with open(side, "w") as f:
                    f.write(once.stdout)
                after = run("compile", side, "--ir", "ast", stdlib=lib)
            else:
                # A copy of the file's directory with the file replaced: its relative imports
                # resolve as before, and a module that imports it back (a cycle) reads the
                # formatted file, not the original beside it.
                here = os.path.join(tmp, "dir")
                shutil.copytree(os.path.dirname(path), here, ignore=shutil.ignore_patterns("Output", "__pycache__"))
                side = os.path.join(here, os.path.basename(path))
                with open(side, "w") as f:
                    f.write(once.stdout)
                after = run("compile", side, "--ir", "ast")
            same = after.returncode == 0 and ast_without_header(after.stdout) == ast_without_header(before.stdout)
            result(same, f"{rel}: fmt changed the checked AST")

# Every ```emmy block in docs/ is a complete file that checks clean.
docs = os.path.join(root, "docs")
blocks = 0
for name in sorted(os.listdir(docs)) if os.path.isdir(docs) else []:
    if not name.endswith(".md"):
        continue
    text = open(os.path.join(docs, name)).read()
    for n, block in enumerate(text.split("```emmy\n")[1:]):
        code = block.split("```", 1)[0]
        blocks += 1
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"{name}.{n}.emmy")
            with open(path, "w") as f:
                f.write(code)
            r = run("check", path)
            result(r.returncode == 0 and r.stderr == "", f"docs/{name} example {n + 1}\n{r.stderr}")

# The command line: exit status 0 clean, 1 program errors, 2 usage errors.
with tempfile.TemporaryDirectory() as tmp:
    good = os.path.join(tmp, "good.emmy")
    bad = os.path.join(tmp, "bad.emmy")
    ugly = os.path.join(tmp, "ugly.emmy")
    with open(good, "w") as f:
        f.write("op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i];\n}\n")
    with open(bad, "w") as f:
        f.write("op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[j];\n}\n")
    with open(ugly, "w") as f:
        f.write("op f(x:f32[N])->(y:f32[N]){y[i]=x[i];}\n")
    cli_cases = [
        (("check", good), 0, ""),
        (("check", bad), 1, "error[E021]"),
        (("check", "--color", "never", bad), 1, "error[E021]"),
        (("check", good, "--target", "sm_77"), 2, "sm_77"),
        (("check", os.path.join(tmp, "missing.emmy")), 2, "does not exist"),
        (("check",), 2, "files is required"),
        (("frobnicate",), 2, ""),
        (("compile", good, "--ir", "ast"), 0, "op f"),
        (("compile", bad, "--ir", "ast"), 1, "E021"),
        (("fmt", "--check", ugly), 1, "not formatted"),
        (("fmt", "--check", good), 0, ""),
        (("--version",), 0, "emmyc 0."),
        (("--help",), 0, "Examples:"),
    ]
    for args, code, text in cli_cases:
        r = run(*args)
        result(r.returncode == code and text in (r.stdout + r.stderr),
               f"emmyc {' '.join(args)}: exit {r.returncode} (want {code}), output lacks {text!r}:\n{r.stdout}{r.stderr}")
    r = subprocess.run([emmyc, "check", good], capture_output=True, text=True,
                       env=dict(env, EMMY_KNOBS="STAGE=d2/tma"))
    result(r.returncode == 0, "EMMY_KNOBS legal on the default target sm_90")
    r = run("fmt", "-i", ugly)
    result(r.returncode == 0 and run("fmt", "--check", ugly).returncode == 0, "fmt -i rewrites the file canonically")

print(f"checked {len(files)} files and {blocks} doc examples")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
