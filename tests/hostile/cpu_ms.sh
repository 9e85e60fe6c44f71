# Sourced by the corpus cases that bound a command's time: CPU seconds, not wall time, since
# the corpus runs its cases side by side (and beside the unit tests on CI's two cores).
# cpu_ms CMD...: runs CMD with the caller's redirections and sets CPU_MS to the user + system
# CPU time it took, in milliseconds; returns CMD's status.
cpu_ms() {
  local TIMEFORMAT=%3R/%3U+%3S times status
  exec {cpu_ms_out}>&1 {cpu_ms_err}>&2
  times=$({ time "$@" >&"$cpu_ms_out" 2>&"$cpu_ms_err"; } 2>&1)
  status=$?
  exec {cpu_ms_out}>&- {cpu_ms_err}>&-
  CPU_MS=$(python3 -c "print(int(1000 * (${times#*/})))")
  return $status
}
