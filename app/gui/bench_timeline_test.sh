#!/usr/bin/env bash
# ctest: modescope --bench-timeline (what scripts/bench-session-timeline times) on a small session
# whose trace stays in the file: modescope-cli writes a session with a synthetic trace of 200,000
# events, the app (settings of its own, keeping traces over 1,000 events in the file) opens it on
# the offscreen platform and exits at the timeline's first frame. Its JSON must say the trace was
# queried window by window (windowed), count every event, have drawn items from what the window
# loaded, and give times and a peak memory; the screenshot of that frame is a PNG of the window's
# size. A file that is not a session is one error line and exit 1.
#   bench_timeline_test.sh MODESCOPE OUTDIR     (modescope-cli and modescope-pngcheck beside MODESCOPE)
set -euo pipefail
app="$1"; out="$2"
bin="$(dirname "$app")"
rm -rf "$out"
mkdir -p "$out/config/Modescope" "$out/data" "$out/shot"
export XDG_CONFIG_HOME="$out/config" XDG_DATA_HOME="$out/data" QT_QPA_PLATFORM=offscreen
printf '[session]\nmax_loaded_trace_events=1000\n' > "$out/config/Modescope/Modescope.conf"
"$bin/modescope-cli" bench-session write-trace "$out/t.modescope" --events 200000
"$app" --bench-timeline "$out/t.modescope" --screenshot "$out/shot" --size 1200x800 > "$out/bench.json" 2> "$out/log.txt"
cat "$out/bench.json"
python3 - "$out/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
problems = []
if r["windowed"] is not True:
    problems.append("the trace was loaded whole, not queried window by window")
if r["events"] != 200000:
    problems.append(f"events {r['events']}, not 200000")
if r["drawn_items"] <= 0 or r["window_loads"] <= 0:
    problems.append(f"nothing drawn ({r['drawn_items']} items, {r['window_loads']} window loads)")
if r["window_events"] + r["window_buckets"] <= 0:
    problems.append("the window loaded neither events nor summary buckets")
if not 0 < r["opened_ms"] <= r["first_paint_ms"]:
    problems.append(f"times out of order: opened {r['opened_ms']} ms, first paint {r['first_paint_ms']} ms")
if not 0 < r["peak_rss_mib"] < 1 << 20:
    problems.append(f"peak_rss_mib {r['peak_rss_mib']}")
for p in problems:
    print("FAILED:", p)
sys.exit(1 if problems else 0)
PY
"$bin/modescope-pngcheck" "$out/shot/timeline.png"
"$bin/modescope-pngcheck" "$out/shot/window.png"
# Not a session: one error line, exit 1, nothing drawn.
echo "not a session" > "$out/bad.modescope"
if "$app" --bench-timeline "$out/bad.modescope" > "$out/bad.json" 2> "$out/bad.txt"; then
  echo "FAILED: --bench-timeline on a file that is not a session exited 0"
  exit 1
fi
grep -q "bad.modescope" "$out/bad.txt" || { echo "FAILED: no error naming bad.modescope:"; cat "$out/bad.txt"; exit 1; }
test ! -s "$out/bad.json" || { echo "FAILED: JSON printed for a bad file"; exit 1; }
echo "bench-timeline: ok"
