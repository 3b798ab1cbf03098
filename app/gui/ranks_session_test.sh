#!/usr/bin/env bash
# ctest: each rank's loss curve reaches the app's Training tab and survives a session. First
# modescope-cli trains two ranks under scripts/mpirun-local with --session: the app opens that
# session and shows one curve per rank, each with its rank's losses (--dump-models against the
# ranks' reports). The app opens the ranks' traces (File > Open Ranks, --open-ranks): the same
# losses, from the traces, and saved as a session without a model, reopened with its Ranks tab and
# curves (a file emptied of them is one error line), and autosaved: after kill -9 the next start
# restores them. Then the app trains on two ranks itself (the
# Training tab's Ranks), saves the session, and a second app opens it: the same rank curves come
# back. Exits 77 (skipped) when xvfb-run or mpirun is missing.
#   ranks_session_test.sh MODESCOPE SOURCE_DIR OUTDIR     (modescope-cli beside MODESCOPE)
set -euo pipefail
app="$1"; src="$2"; out="$3"
cli="$(dirname "$app")/modescope-cli"
for tool in xvfb-run mpirun; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "skipped: $tool is not installed (apt-get install xvfb xauth openmpi-bin)"
    exit 77
  fi
done
rm -rf "$out"
mkdir -p "$out/cli" "$out/opened" "$out/train1" "$out/train2"
export XDG_CONFIG_HOME="$out/config" XDG_DATA_HOME="$out/data" MODESCOPE_DATA_DIR="$src/samples/data"
model="zoo:mnist_mlp?batch=16&size=8&hidden=16"
source "$(dirname "$0")/autosave_test_util.sh"
run_app() { xvfb-run -a -s "-screen 0 1920x1200x24" "$app" "$@" --size 1440x900; }
training() { sed -n '/^## training/,/^## ranks/p' "$1"; }
# The dump's curves named "MODE rank R" (MODELS.txt) against each rank's report (DIR/rR.json):
# the same losses, each with its "rank R of 2" summary, and not the same for both ranks.
same_losses() {
  python3 - "$@" <<'PY'
import json, sys
models, reports, mode = sys.argv[1:4]
series, name = {}, None
for line in open(models):
    if line.startswith("## ") and series:
        break
    if line.startswith(f"{mode} rank "):
        name = int(line.split()[2].rstrip(":"))
        series[name] = []
        assert line.rstrip().endswith(f"rank {name} of 2"), line
    elif name is not None and line.startswith("  "):
        series[name].append(float(line.split("\t")[1]))
for r in (0, 1):
    losses = json.load(open(f"{reports}/r{r}.json"))["losses"]
    assert series.get(r) == losses, f"{mode} rank {r}: the app shows {series.get(r)}, the report says {losses}"
assert series[0] != series[1], "both ranks show the same losses"
PY
}

# modescope-cli under mpirun: rank 0's session holds both ranks' curves.
"$src/scripts/mpirun-local" -np 2 "$cli" train "$model" --data-dir "$src/samples/data" --threads 1 --steps 4 \
  --report "$out/cli/r{rank}.json" --session "$out/cli/s.modescope" > "$out/cli/log.txt" 2>&1 ||
  { cat "$out/cli/log.txt"; exit 1; }
run_app "$out/cli/s.modescope" --screenshot "$out/opened" --dump-models "$out/opened/models.txt" \
  > "$out/opened/log.txt" 2>&1 || { cat "$out/opened/log.txt"; exit 1; }
grep -q "^## training (2 series)" "$out/opened/models.txt" || { training "$out/opened/models.txt"; exit 1; }
same_losses "$out/opened/models.txt" "$out/cli" PyNative
echo "the app shows each rank's losses"

# File > Open Ranks on the ranks' traces: each rank's loss from its trace, the same as its report's.
mkdir -p "$out/traces"
"$src/scripts/mpirun-local" -np 2 "$cli" train "$model" --data-dir "$src/samples/data" --threads 1 --steps 4 \
  --mode graph --report "$out/traces/r{rank}.json" --profile "$out/traces/p{rank}" > "$out/traces/log.txt" 2>&1 ||
  { cat "$out/traces/log.txt"; exit 1; }
run_app --open-ranks "$out/traces/p0/graph.train.trace.json,$out/traces/p1/graph.train.trace.json" \
  --screenshot "$out/traces" --dump-models "$out/traces/models.txt" --save-session "$out/traces/ranks.modescope" \
  > "$out/traces/app.txt" 2>&1 || { cat "$out/traces/app.txt"; exit 1; }
test -s "$out/traces/ranks.png" && test -s "$out/traces/train.png"
same_losses "$out/traces/models.txt" "$out/traces" Graph
echo "File > Open Ranks shows each rank's losses"

# The ranks alone (no model opened) saved as a session: reopened, the Ranks tab and the curves come back.
mkdir -p "$out/reopened"
run_app "$out/traces/ranks.modescope" --screenshot "$out/reopened" --dump-models "$out/reopened/models.txt" \
  > "$out/reopened/log.txt" 2>&1 || { cat "$out/reopened/log.txt"; exit 1; }
grep -q "^## ranks (2 lanes)" "$out/reopened/models.txt" || { echo "the ranks were not restored"; exit 1; }
ranks() { sed -n '/^## training/,$p' "$1"; }
diff <(ranks "$out/traces/models.txt") <(ranks "$out/reopened/models.txt") ||
  { echo "the ranks or their curves differ after the round trip"; exit 1; }
same_losses "$out/reopened/models.txt" "$out/traces" Graph
# The ranks alone, opened in a running app (no model) that is then killed with kill -9: the autosave
# holds them, and the next start restores them, the Ranks tab and the curves as they were shown.
mkdir -p "$out/crashed"
XDG_DATA_HOME="$out/crash-data" run_app \
  --open-ranks "$out/traces/p0/graph.train.trace.json,$out/traces/p1/graph.train.trace.json" > "$out/crashed/app.txt" 2>&1 &
kill_after_autosave $! "$out/crash-data" "$out/crashed/app.txt"
XDG_DATA_HOME="$out/crash-data" run_app --restore-autosave --screenshot "$out/crashed" \
  --dump-models "$out/crashed/models.txt" > "$out/crashed/log.txt" 2>&1 || { cat "$out/crashed/log.txt"; exit 1; }
grep -q "Restored from the session: 2 rank traces, 2 training curves$" "$out/crashed/log.txt" ||
  { echo "the autosaved ranks were not restored"; grep Restored "$out/crashed/log.txt"; exit 1; }
diff <(ranks "$out/traces/models.txt") <(ranks "$out/crashed/models.txt") ||
  { echo "the ranks or their curves differ after the crash"; exit 1; }
echo "ranks opened without a model are autosaved and restored after kill -9"
# Emptied of its ranks and curves, the file holds nothing to open: one error line naming it and the table.
cp "$out/traces/ranks.modescope" "$out/empty.modescope"
python3 - "$out/empty.modescope" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for t in ("rank_collectives", "rank_steps", "rank_lanes", "training"):
    db.execute(f"DELETE FROM {t}")
    db.execute("UPDATE digests SET rows = 0, hash = (SELECT hash FROM digests WHERE tbl = 'runs') WHERE tbl = ?", (t,))
db.commit()
PY
if run_app "$out/empty.modescope" --screenshot "$out/empty" > "$out/empty.txt" 2>&1; then
  echo "a session with nothing to open opened"; exit 1
fi
grep -q "error: $out/empty.modescope: table model is empty" "$out/empty.txt" || { cat "$out/empty.txt"; exit 1; }
echo "a session of ranks alone reopens; one with nothing to open is one error line"

# The app's Training tab on two ranks: saved, reopened, the same curves.
run_app "$model" --train 3 --ranks 2 --screenshot "$out/train1" --save-session "$out/t.modescope" \
  --dump-models "$out/train1/models.txt" > "$out/train1/log.txt" 2>&1 || { cat "$out/train1/log.txt"; exit 1; }
grep -q "^PyNative rank 1: rank 1 of 2" "$out/train1/models.txt" || { training "$out/train1/models.txt"; exit 1; }
run_app "$out/t.modescope" --screenshot "$out/train2" --dump-models "$out/train2/models.txt" > "$out/train2/log.txt" 2>&1
grep -qE "Restored from the session: (.*, )?[24] training curves" "$out/train2/log.txt" || { echo "the rank curves were not restored"; exit 1; }
diff <(training "$out/train1/models.txt") <(training "$out/train2/models.txt") ||
  { echo "the rank curves differ after the round trip"; exit 1; }
echo "rank curves: opened from the CLI's session, and saved and reopened by the app"
