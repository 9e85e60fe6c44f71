# expect-exit: 1
# expect-output: <input 1>:1:14: error\[E002\]
# expect-output: defined op f
# expect-output: ok: 1 op
# expect-output: error: a command \(:list\) came inside a definition \(1 brace still open\)
# reject-output: internal error|Aborted
# Guards against one REPL input without its ';' swallowing every later line and command.
"$EMMYC" repl > out.txt 2>&1 <<'X'
import std.nn

op f(x: f32[N]) -> (y: f32[N]) {
  y[i] = x[i];
}
:check
op g(x: f32[N]) -> (y: f32[N]) {
:list
:check
X
status=$?
cat out.txt
exit $status
