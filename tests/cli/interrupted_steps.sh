#!/usr/bin/env bash
# Step folders set aside by resumes, with real runs: `stoker run` saves steps 4, 8 and 12 on 2
# ranks; twice, steps 8 and 12 lose rank 0's file (a save killed part way) and a resume on 1 rank
# goes on from step 4, moving them aside (step-8.interrupted, then step-8.interrupted-1, ...).
# The second resume, finding more than 3 set-aside folders, says how to remove them. `stoker
# steps --interrupted` lists all four, newest first, with sizes, and marks the one beyond the
# newest 3 removable; `--remove --keep 1` deletes the three older ones and nothing else (the
# step folders and the lock stay); --keep and --remove without --interrupted are refused.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work interrupted
"$STOKER" -q synth "$work/corpus" --dataset a:4000:60 --files 2 --seed 1 > /dev/null
ck="$work/ck dir"
common=(--data "$work/corpus" --seq-len 32 --batch-size 2 --logical-shards 8 --checkpoint-dir "$ck"
        --save-every 4)
$MPIRUN -np 2 "$STOKER" run "${common[@]}" --steps 12 > "$work/run.out" 2>&1 ||
  { cat "$work/run.out" >&2; fail "the first run failed"; }

for round in 1 2; do
  rm "$ck"/step-{8,12}/loader/rank-00000-of-*.ckpt
  "$STOKER" run "${common[@]}" --steps 12 --resume > "$work/resume-$round.out" 2>&1 ||
    { cat "$work/resume-$round.out" >&2; fail "resume $round failed"; }
  [ "$(grep -c "moved the interrupted step" "$work/resume-$round.out")" = 2 ] ||
    { cat "$work/resume-$round.out" >&2; fail "resume $round did not set steps 8 and 12 aside"; }
  # The resumed run saved steps 8 and 12 again, on 1 rank: the next round breaks those.
done
grep -qF "$ck holds 4 step folders set aside by resumes: \`stoker steps $ck --interrupted --remove\`" \
  "$work/resume-2.out" || { cat "$work/resume-2.out" >&2; fail "resume 2 did not suggest removing"; }
! grep -q "set aside by resumes" "$work/resume-1.out" || fail "resume 1 suggested removing 2 folders"

"$STOKER" steps "$ck" --interrupted > "$work/list.out" || fail "stoker steps --interrupted failed"
cat "$work/list.out"
[ "$(grep -c "kept" "$work/list.out")" = 3 ] && [ "$(grep -c "removable" "$work/list.out")" = 1 ] &&
  grep -q "1 beyond the newest 3: --remove deletes them" "$work/list.out" ||
  fail "the listing does not keep 3 and mark 1 removable"
for name in step-8.interrupted step-12.interrupted step-8.interrupted-1 step-12.interrupted-1; do
  grep -qF "$ck/$name" "$work/list.out" || fail "the listing lacks $name"
done
# Newest first: round 2's folders were written after round 1's.
first=$(sed -n 2p "$work/list.out")
[[ "$first" == *.interrupted-1 ]] || fail "the newest set-aside folder is not listed first: $first"

$MPIRUN -np 2 "$STOKER" steps "$ck" --interrupted --remove --keep 1 > "$work/remove.out" ||
  fail "stoker steps --interrupted --remove failed"
[ "$(grep -c " removed " "$work/remove.out")" = 3 ] &&
  grep -q "removed 3 folders (.*), kept the newest 1" "$work/remove.out" ||
  fail "--remove --keep 1: $(cat "$work/remove.out")"
left=$(cd "$ck" && ls -d step-*.interrupted* | wc -l)
[ "$left" = 1 ] || fail "$left set-aside folders left, not 1"
for step in 4 8 12; do [ -d "$ck/step-$step" ] || fail "--remove took step-$step"; done
"$STOKER" steps "$ck" --newest > /dev/null || fail "the step folders are no longer complete"

for flags in "--keep 1" "--remove"; do
  # shellcheck disable=SC2086
  if "$STOKER" steps "$ck" $flags > "$work/bad.out" 2>&1; then fail "steps $flags was accepted"; fi
  grep -q "requires --interrupted" "$work/bad.out" || fail "steps $flags: $(cat "$work/bad.out")"
done
echo "PASS: set-aside step folders listed newest first and removed beyond --keep"
