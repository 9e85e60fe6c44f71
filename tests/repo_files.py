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
                side = path + ".fmt-check.emmy"
                with open(side, "w") as f:
                    f.write(once.stdout)
                try:
                    after = run("compile", side, "--ir", "ast")
                finally:
                    os.remove(side)
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

print(f"checked {len(files)} files and {blocks} doc examples")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
