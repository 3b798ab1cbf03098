#!/usr/bin/env bash
# ctest (label scenario): the real window on a 1366x768 virtual X screen, walked through as a user
# would (modescope --scenario, scenario.h); each step's state (JSON) and screenshot stay in OUTDIR.
# Exits 77 (skipped) when xvfb-run is missing or no X server starts.
#   scenario_test.sh MODESCOPE MODEL OUTDIR [WxH]
set -uo pipefail
app="$1"; model="$2"; out="$3"; screen="${4:-1366x768}"
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "skipped: xvfb-run is not installed (apt-get install xvfb xauth)"
  exit 77
fi
if ! xvfb-run -a -s "-screen 0 ${screen}x24" true >/dev/null 2>&1; then
  echo "skipped: no X server starts under xvfb-run here"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
# A settings folder of its own: nothing read from or written to the user's.
export XDG_CONFIG_HOME="$out/config"
# As an older version left them: the level of its day saved at exit, which is no choice of the user's.
mkdir -p "$out/config/Modescope"
printf '[run]\njit=O1\n' > "$out/config/Modescope/Modescope.conf"
xvfb-run -a -s "-screen 0 ${screen}x24" "$app" --scenario "$out" "$model" > "$out/log.txt" 2>&1
rc=$?
grep -E "^scenario:" "$out/log.txt"
exit $rc
