#!/usr/bin/env bash
# ctest: a session survives the app. The real app opens MODEL, runs both modes, shows pass N and
# saves the session (--save-session); a second app opens only that session file. The data the
# views are built from must come back exactly: the comparison table (compare.csv, the compare
# view's model), and the item models behind the views (--dump-models: comparison, pass list, the
# values of both modes, training curves, the node selected in the graph shown and the inspector's
# rows for it: a selection made in a pass's snapshot is selected again once that snapshot is laid
# out). A trace left in the file is read window by window and
# copied whole by the next save, and the comparison and memory views show what the whole traces did.
# Then a damaged session is refused with one line. And the kill -9 path: an app killed after an
# autosave leaves its marker, and --restore-autosave restores the autosave (of runs, and of the
# numerics alone, autosaved when their job ends). Exits 77 (skipped) when xvfb-run is missing.
#   session_roundtrip_test.sh MODESCOPE MODEL OUTDIR
set -euo pipefail
app="$1"; model="$2"; out="$3"
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "skipped: xvfb-run is not installed (apt-get install xvfb xauth)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out/first" "$out/second"
# Settings and app data of their own: the test must not read or change the user's.
export XDG_CONFIG_HOME="$out/config" XDG_DATA_HOME="$out/data"
# The digits the training leg learns sit beside the sample models (samples/data).
export MODESCOPE_DATA_DIR="${MODESCOPE_DATA_DIR:-$(cd "$(dirname "$model")/../data" && pwd)}"
source "$(dirname "$0")/autosave_test_util.sh"
run_app() { xvfb-run -a -s "-screen 0 1920x1200x24" "$app" "$@" --size 1440x900; }
run_app "$model" --run both --iterations 2 --show-pass 2 --numerics diff --screenshot "$out/first" \
  --save-session "$out/s.modescope" --dump-models "$out/first/models.txt" 2>&1 | tee "$out/first/log.txt"
test -s "$out/s.modescope"
run_app "$out/s.modescope" --screenshot "$out/second" --dump-models "$out/second/models.txt" 2>&1 |
  tee "$out/second/log.txt"
# One line says what came back: both runs, their traces and pass snapshots, the numerics.
grep -qE "Restored from the session: 2 runs \(PyNative, Graph\), 2 traces, [1-9][0-9]* pass snapshots, the numerics$" \
  "$out/second/log.txt" || { echo "the runs were not restored"; grep Restored "$out/second/log.txt"; exit 1; }
cmp "$out/first/compare.csv" "$out/second/compare.csv" || { echo "the comparison differs after the round trip"; exit 1; }
# The item models behind the views (comparison, pass list, values of both modes, training curves),
# row by row, in the app that saved and the app that reopened.
grep -q "^## values ([1-9]" "$out/first/models.txt" || { echo "no values compared before saving"; exit 1; }
grep -q "^node [0-9].*drawn$" "$out/first/models.txt" || { echo "no node selected before saving"; exit 1; }
grep -q "^node [0-9].*drawn$" "$out/second/models.txt" || { echo "the session's selected node was not restored"; exit 1; }
diff "$out/first/models.txt" "$out/second/models.txt" || { echo "the views' models differ after the round trip"; exit 1; }
# Training curves: trained, saved, reopened; the curves' points and summaries come back.
mkdir -p "$out/train1" "$out/train2"
run_app "zoo:mnist_mlp?batch=16&size=8&hidden=16" --train 6 --screenshot "$out/train1" \
  --save-session "$out/t.modescope" --dump-models "$out/train1/models.txt" > "$out/train1/log.txt" 2>&1
run_app "$out/t.modescope" --screenshot "$out/train2" --dump-models "$out/train2/models.txt" > "$out/train2/log.txt" 2>&1
grep -q "^## training (2 series)" "$out/train1/models.txt" || { cat "$out/train1/models.txt"; exit 1; }
grep -q "Restored from the session: .*2 training curves" "$out/train2/log.txt" || { echo "the curves were not restored"; exit 1; }
diff <(sed -n '/^## training/,$p' "$out/train1/models.txt") <(sed -n '/^## training/,$p' "$out/train2/models.txt") ||
  { echo "the training curves differ after the round trip"; exit 1; }
# Traces left in the file (a setting of 0 events loaded): the timeline reads them window by window,
# and saving again copies them whole into the new file.
mkdir -p "$out/config/Modescope" "$out/windowed"
printf '[session]\nmax_loaded_trace_events=0\n' > "$out/config/Modescope/Modescope.conf"
run_app "$out/s.modescope" --screenshot "$out/windowed" --save-session "$out/w.modescope" \
  --dump-models "$out/windowed/models.txt" 2>&1 | tee "$out/windowed/log.txt"
grep -q "trace (.* events) stays in the session file" "$out/windowed/log.txt" || { echo "the trace was loaded"; exit 1; }
# The comparison and the memory heatmap of traces kept in the file: what the whole traces showed.
views() { sed -n '/^## compare/,/^## passes/p' "$1"; }
grep -q "^## compare ([1-9]" "$out/windowed/models.txt" || { echo "no comparison with the traces in the file"; exit 1; }
grep -q "^## memory ([1-9]" "$out/windowed/models.txt" || { echo "no memory panels with the traces in the file"; exit 1; }
diff <(views "$out/first/models.txt") <(views "$out/windowed/models.txt") ||
  { echo "the comparison or the heatmap differs with the traces kept in the file"; exit 1; }
# Saved from there, the comparison travels on: the file opened with its traces kept again.
mkdir -p "$out/windowed2"
run_app "$out/w.modescope" --screenshot "$out/windowed2" --dump-models "$out/windowed2/models.txt" > "$out/windowed2/log.txt" 2>&1
# A schema-2 file (its comparison stored without a report, as schema 2 wrote it) with its traces kept
# in the file: the comparison is made again from the traces, the same as the first app's.
mkdir -p "$out/old"
cp "$out/s.modescope" "$out/old.modescope"
python3 - "$out/old.modescope" <<'PY'
import sqlite3, struct, sys
db = sqlite3.connect(sys.argv[1])
db.executescript("""
ALTER TABLE trace_events DROP COLUMN depth; ALTER TABLE trace_tracks DROP COLUMN depths;
DROP TABLE trace_iterations; DROP TABLE run_fallback_nodes; DROP TABLE rank_lanes; DROP TABLE rank_steps;
DROP TABLE rank_collectives; DROP TABLE snapshot_constants; DROP TABLE snapshot_values;
DROP TABLE snapshot_constant_budget; DROP TABLE snapshot_nested_values; DROP TABLE trace_name_totals;
DELETE FROM digests WHERE tbl IN ('trace_iterations', 'run_fallback_nodes', 'rank_lanes', 'rank_steps',
  'rank_collectives', 'snapshot_constants', 'snapshot_values', 'snapshot_constant_budget', 'snapshot_nested_values',
  'trace_name_totals');
UPDATE comparisons SET report = ''; UPDATE schema_version SET version = 2;""")
# Each table's digest as the app computes it (FNV-1a 64 over each value's SQLite type and bytes).
def digest(table):
    h, rows = 1469598103934665603, 0
    def add(b):
        nonlocal h
        for x in b:
            h = ((h ^ x) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    for row in db.execute(f"SELECT * FROM {table} ORDER BY rowid"):
        rows += 1
        for v in row:
            if v is None:
                add(struct.pack("<i", 5))
            elif isinstance(v, int):
                add(struct.pack("<iq", 1, v))
            elif isinstance(v, float):
                add(struct.pack("<id", 2, v))
            else:
                b = v.encode() if isinstance(v, str) else v
                add(struct.pack("<ii", 3 if isinstance(v, str) else 4, len(b)) + b)
    return rows, f"{h:016x}"
for (table,) in db.execute("SELECT tbl FROM digests").fetchall():
    db.execute("UPDATE digests SET rows = ?, hash = ? WHERE tbl = ?", (*digest(table), table))
db.commit()
db.executescript("PRAGMA user_version = 2; PRAGMA journal_mode = DELETE; VACUUM;")
PY
sum=$(md5sum < "$out/old.modescope")
run_app "$out/old.modescope" --screenshot "$out/old" --dump-models "$out/old/models.txt" > "$out/old/log.txt" 2>&1 ||
  { cat "$out/old/log.txt"; exit 1; }
grep -q "old.modescope: the session (schema 2) stores no comparison of its PyNative and Graph runs: compared them again from their traces" \
  "$out/old/log.txt" || { echo "the old file's comparison was not made again"; cat "$out/old/log.txt"; exit 1; }
diff <(views "$out/first/models.txt") <(views "$out/old/models.txt") ||
  { echo "the comparison made again from the old file's traces differs"; exit 1; }
test "$(md5sum < "$out/old.modescope")" = "$sum" || { echo "opening the old file changed it"; exit 1; }
rm "$out/config/Modescope/Modescope.conf"
diff <(views "$out/first/models.txt") <(views "$out/windowed2/models.txt") ||
  { echo "the comparison was not saved with the traces kept in the file"; exit 1; }
mkdir -p "$out/rewritten"
run_app "$out/w.modescope" --screenshot "$out/rewritten" 2>&1 | tee "$out/rewritten/log.txt"
cmp "$out/first/compare.csv" "$out/rewritten/compare.csv" || { echo "the traces were not copied whole"; exit 1; }
# kill -9 after an autosave: the next start with --restore-autosave restores it.
rm -rf "$out/data"
run_app "$model" --run both --iterations 2 > "$out/killed.txt" 2>&1 &
kill_after_autosave $! "$out/data" "$out/killed.txt"
run_app --restore-autosave --screenshot "$out/restored" 2>&1 | tee "$out/restored.txt"
grep -qE "Restored from the session: [12] runs? " "$out/restored.txt" || { echo "the autosave was not restored"; exit 1; }
# The numerics alone (no run) are autosaved when their job ends (the timer set to an hour: not by it):
# killed then, the autosave holds them.
rm -rf "$out/data"
printf '[autosave]\nseconds=3600\n' > "$out/config/Modescope/Modescope.conf"
run_app "$model" --numerics diff > "$out/killed-numerics.txt" 2>&1 &
kill_after_autosave $! "$out/data" "$out/killed-numerics.txt"
rm "$out/config/Modescope/Modescope.conf"
# Started with a model to open, the app sets the autosave aside (not overwritten by its own
# autosaves) and says where; that file restores the numerics.
run_app "$model" --screenshot "$out/aside" > "$out/aside.txt" 2>&1 || { cat "$out/aside.txt"; exit 1; }
kept=$(sed -n 's/.*the session it autosaved is kept as \(.*autosave-[0-9-]*\.modescope\) (File > Open Session)$/\1/p' \
  "$out/aside.txt" | head -1)
[[ -n "$kept" && -s "$kept" ]] || { echo "the autosave was not set aside"; cat "$out/aside.txt"; exit 1; }
run_app "$kept" --screenshot "$out/restored-numerics" --dump-models "$out/restored-numerics/models.txt" \
  > "$out/restored-numerics.txt" 2>&1 || { cat "$out/restored-numerics.txt"; exit 1; }
grep -q "Restored from the session: the numerics$" "$out/restored-numerics.txt" ||
  { echo "the autosaved numerics were not restored"; grep Restored "$out/restored-numerics.txt"; exit 1; }
grep -q "^## values ([1-9]" "$out/restored-numerics/models.txt" || { echo "no values after the restore"; exit 1; }
# A damaged session: one clean error line naming the file, and the app exits non-zero, file intact.
head -c 5000 "$out/s.modescope" > "$out/cut.modescope"
sum=$(md5sum < "$out/cut.modescope")
if run_app "$out/cut.modescope" --screenshot "$out/cut" > "$out/cut.txt" 2>&1; then
  echo "a truncated session opened"; exit 1
fi
grep -q "error: $out/cut.modescope: truncated" "$out/cut.txt" || { cat "$out/cut.txt"; exit 1; }
test "$(md5sum < "$out/cut.modescope")" = "$sum"
echo "session round trip: ok"
