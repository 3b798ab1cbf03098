#!/usr/bin/env bash
# ctest: the real window (offscreen platform) takes the graphs of its Pass Effect and Numerics work
# from its compile cache, as its log counts them (the run report's compiles and cache hits): after a
# Graph-mode Run, the Pass Effect compiles only the pipelines without a pass, and measured again
# compiles nothing; comparing values, bisecting a clean model and the NaN trap compile nothing.
#   compile_reuse_test.sh MODESCOPE MODEL OUTDIR
set -uo pipefail
app="$1"; model="$2"; out="$3"
rm -rf "$out"
mkdir -p "$out"
# A settings folder of its own: nothing read from or written to the user's.
export XDG_CONFIG_HOME="$out/config" QT_QPA_PLATFORM=offscreen
failed() { echo "FAILED: $*"; exit 1; }
# The number before `what` in a log line.
count_of() { sed -n "s/.* \([0-9][0-9]*\) $2.*/\1/p" <<< "$1"; }

"$app" "$model" --run graph --iterations 2 --pass-effect --pass-effect --screenshot "$out/effect" \
  > "$out/effect.txt" 2>&1 || failed "the app failed (see $out/effect.txt)"
grep -q "Graph-mode run on .*, compile [0-9.]* ms; 1 compiled graph(s)" "$out/effect.txt" ||
  failed "the Run compiled no graph of its own"
mapfile -t effects < <(grep "Pass effects measured for" "$out/effect.txt")
(( ${#effects[@]} == 2 )) || failed "measured ${#effects[@]} time(s), not twice"
printf '%s\n' "${effects[@]}"
passes=$(sed -n 's/.*measured for \([0-9][0-9]*\) pass.*/\1/p' <<< "${effects[0]}")
(( passes > 0 )) || failed "no pass measured"
first=$(count_of "${effects[0]}" "compiled graph")
second=$(count_of "${effects[1]}" "compiled graph")
[[ "$first" == "$passes" ]] || failed "the first measurement compiled $first graphs, not one per pass left out ($passes)"
[[ "$second" == 0 ]] || failed "measuring again compiled $second graphs"

for what in diff bisect nan; do
  "$app" "$model" --run graph --iterations 2 --numerics "$what" --screenshot "$out/$what" > "$out/$what.txt" 2>&1 ||
    failed "the app failed (see $out/$what.txt)"
  line=$(grep -E "^(Comparing|Bisecting|Looking).*: [0-9]+ compiled graph" "$out/$what.txt")
  echo "$line"
  [[ "$(count_of "$line" "compiled graph")" == 0 ]] || failed "--numerics $what compiled its own graph"
  [[ "$(count_of "$line" "cache hit")" == 1 ]] || failed "--numerics $what found no compiled graph"
done
echo "compile reuse: ok"
