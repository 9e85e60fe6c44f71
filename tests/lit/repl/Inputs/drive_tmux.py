"""Drives `emmyc repl` on a real terminal (a detached tmux session): types keys, waits for what
the screen should show, and prints the screen and the history file for FileCheck."""
import os
import subprocess
import sys
import time

emmyc, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
config = os.path.join(work, "config")
socket = f"emmy-repl-test-{os.getpid()}"


def tmux(*args):
    return subprocess.run(["tmux", "-L", socket, *args], check=True, capture_output=True, text=True).stdout


def screen():
    return tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "repl")


def wait_for(text, timeout=60.0, times=1):
    """Waits until the screen shows `text` at least `times` times: typing before the prompt is
    drawn lets the terminal echo the keys ahead of it."""
    end = time.time() + timeout
    while time.time() < end:
        if screen().count(text) >= times:
            return
        time.sleep(0.1)
    sys.stdout.write(screen())
    sys.exit(f"drive_tmux: the screen never showed {text!r}")


def typed(keys, then=None):
    if keys.endswith(";"):  # tmux reads a trailing ';' as its own command separator
        keys = keys[:-1] + "\\;"
    tmux("send-keys", "-t", "repl", "-l", keys)
    if then:
        tmux("send-keys", "-t", "repl", then)


env = f"env XDG_CONFIG_HOME={config} EMMY_STDLIB={os.environ.get('EMMY_STDLIB', '')} TERM=xterm"
tmux("new-session", "-d", "-s", "repl", "-x", "160", "-y", "60", f"{env} {emmyc} repl; sleep 30")
try:
    wait_for("emmy> ")
    # A definition over three lines: the continuation prompt, then the definition checked.
    typed("op twice(x: f32[N]) -> (y: f32[N]) {", "Enter")
    wait_for("  ...> ")
    typed("  y[n] = 2 * x[n];", "Enter")
    wait_for("  ...> ", times=2)
    typed("}", "Enter")
    wait_for("defined op twice")
    wait_for("emmy> ", times=2)
    # Tab completes a command and an op name.
    typed(":sh", "Tab")
    typed(" N=8", "Enter")
    wait_for("shape N=8")
    wait_for("emmy> ", times=3)
    typed(":run tw", "Tab")
    typed(" --interp", "Enter")
    wait_for("result")
    wait_for(" ok")
    wait_for("emmy> ", times=4)
    # An error shows its caret and leaves the session as it was.
    typed("op bad(x: f32[N]) -> (y: f32[N]) { y[n] = q[n]; }", "Enter")
    wait_for("(not added; the session is unchanged)")
    wait_for("emmy> ", times=5)
    typed(":list", "Enter")
    wait_for("knobs (none)")
    wait_for("emmy> ", times=6)
    typed(":quit", "Enter")
    end = time.time() + 60
    history = os.path.join(config, "emmy", "repl_history")
    while time.time() < end and not os.path.exists(history):
        time.sleep(0.1)
    sys.stdout.write(screen())
    print("== history")
    with open(history) as f:
        sys.stdout.write(f.read())
finally:
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
