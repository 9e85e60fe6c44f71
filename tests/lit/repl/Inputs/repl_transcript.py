"""Replays every ```repl block of a Markdown file through `emmyc repl` and compares the output
with the block's, line for line: the sessions shown in the docs are the sessions Emmy runs.
In a block, lines after "emmy> " and "  ...> " are input; every other line is output."""
import difflib
import os
import subprocess
import sys
import tempfile

emmyc, doc = os.path.abspath(sys.argv[1]), sys.argv[2]
blocks, current, start = [], None, 0
with open(doc, encoding="utf-8") as f:
    for number, line in enumerate(f.read().splitlines(), 1):
        if current is None and line.strip() == "```repl":
            current, start = [], number
        elif current is not None and line.strip() == "```":
            blocks.append((start, current))
            current = None
        elif current is not None:
            current.append(line)
if not blocks:
    sys.exit(f"{doc}: no ```repl block")

failed = 0
for start, lines in blocks:
    inputs = [l[len("emmy> "):] if l.startswith("emmy> ") else l[len("  ...> "):]
              for l in lines if l.startswith(("emmy> ", "  ...> "))]
    expected = [l for l in lines if not l.startswith(("emmy> ", "  ...> "))]
    with tempfile.TemporaryDirectory() as work:
        run = subprocess.run([emmyc, "repl"], input="\n".join(inputs) + "\n", cwd=work, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    got = run.stdout.splitlines()
    if got != expected:
        failed += 1
        print(f"{doc}:{start}: the session's output differs from the doc's (- doc, + emmyc repl):")
        sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(expected, got, lineterm="", n=1))
    else:
        print(f"{doc}:{start}: {len(inputs)} input lines, {len(expected)} output lines: as shown")
sys.exit(1 if failed else 0)
