#!/usr/bin/env bash
# ctest: runs the real app under a virtual X display, takes --screenshot and checks the PNG is not
# blank. Exits 77 (skipped) when xvfb-run is missing.
#   screenshot_test.sh MODESCOPE PNGCHECK MODEL OUTDIR [extra modescope arguments]
set -euo pipefail
app="$1"; check="$2"; model="$3"; out="$4"; shift 4
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "skipped: xvfb-run is not installed (apt-get install xvfb xauth)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
# A settings folder of its own: the test must not read or change the user's recent files.
export XDG_CONFIG_HOME="$out/config"
xvfb-run -a -s "-screen 0 1920x1200x24" "$app" "$model" --screenshot "$out" "$@" 2>&1 | tee "$out/log.txt"
# Numerics (--numerics diff): the comparison of both modes' values reached the log, with nothing past
# the tolerance on a healthy model.
if [[ " $* " == *" --numerics diff "* ]]; then
  grep -q "Values: .* none above" "$out/log.txt" || { echo "no clean comparison of the values in the log"; exit 1; }
fi
# Training (--train N): the Training tab with both loss curves.
if [[ " $* " == *" --train "* ]]; then
  "$check" "$out/train.png" 16
  exit 0
fi
"$check" "$out/graph.png" 16
# After runs (--run), the result views are written too and must not be blank either.
if [[ " $* " == *" --run "* ]]; then
  for png in timeline memory memory_time compare; do "$check" "$out/$png.png" 16; done
  if [[ " $* " == *" --pass-effect "* ]]; then "$check" "$out/pass_delta.png" 4; fi
  if [[ " $* " == *" both "* || " $* " == *" graph "* ]]; then "$check" "$out/passes.png" 4; fi
fi
