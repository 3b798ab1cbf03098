# Sourced by the app's session tests (bash): the kill -9 leg of an autosave test.
#   kill_after_autosave PID DATA_DIR LOG
# Waits (up to 60 s) until the app started in the background as PID (xvfb-run's) has written an
# autosave under DATA_DIR, then kills the app itself with kill -9 (the pid its running marker holds)
# and reaps PID. Without an autosave: says so, shows LOG, stops PID and returns 1.
kill_after_autosave() {
  local wrapper="$1" data="$2" log="$3" autosave=""
  for _ in $(seq 600); do
    autosave=$(find "$data" -name autosave.modescope 2>/dev/null | head -1 || true)
    [[ -n "$autosave" && -s "$autosave" ]] && break
    autosave=""
    sleep 0.1
  done
  if [[ -z "$autosave" ]]; then
    echo "no autosave was written under $data"
    cat "$log"
    kill "$wrapper"
    return 1
  fi
  kill -9 "$(cat "$(dirname "$autosave")/running")"
  wait "$wrapper" || true
}
