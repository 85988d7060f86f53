#!/usr/bin/env bash
# I/O faults injected into a real `stoker run` under mpirun -np 2 through STOKER_FAULTS (the I/O
# seam, os/posix_io.h; for testing only), each run under `timeout 60` so that a hang fails:
#   - rank 1's fsync (then its write, then its rename) of its step-6 checkpoint file fails: the
#     run exits non-zero, rank 1 printing an error that names the file and the call; step 6 holds
#     no file and no temporary file of rank 1; --resume goes on from the newest step both ranks
#     saved, 4 (the failing call waits 2 s first, so that rank 0 has saved it), its dump proves
#     it, and the chain of traces audits clean;
#   - a pread of a shard fails (the 6th read of a/part-00001.h5 on each rank): the run exits
#     non-zero naming the file, its dataset and the byte offset;
#   - on one rank, the read error is one line and exit code 1, without MPI_Abort's banner;
#   - a bad STOKER_FAULTS: exit 2 before MPI starts, naming the rule.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work io-faults

"$STOKER" synth "$work/corpus" --dataset a:8000:40 --dataset b:4000:100 --files 2 --seed 1 \
  --unique-tokens > "$work/synth.log" 2>&1 || { cat "$work/synth.log" >&2; fail "stoker synth"; }
seq=32 batch=2
common=(--data "$work/corpus" --seq-len "$seq" --batch-size "$batch" --logical-shards 16 --seed 4)
batch_bytes=$((batch * (seq + 1) * 8))

# expect_failure NAME FAULTS ARGS...: `stoker run ARGS` at 2 ranks with STOKER_FAULTS=FAULTS
# fails (not by timeout); its output is in $work/NAME.txt.
expect_failure() {
  local name=$1 faults=$2 rc=0
  shift 2
  STOKER_FAULTS=$faults timeout 60 $MPIRUN -np 2 "$STOKER" run "${common[@]}" "$@" \
    > "$work/$name.txt" 2>&1 || rc=$?
  [ "$rc" != 124 ] || fail "$name: still running after 60 s (a hang?)"
  [ "$rc" != 0 ] || fail "$name: exited 0:
$(cat "$work/$name.txt")"
}

# --- A save failing on rank 1: the previous step stays the one to resume from. ---
for call in fsync write rename; do
  ck="$work/ckpt-$call" tr="$work/trace-$call"
  file="$ck/step-6/loader/rank-00001-of-00002.ckpt"
  # The failing call first waits 2 s, so that rank 0 (which waits for no other rank, and may be
  # slow to save on a loaded machine) has saved steps 2 and 4 when rank 1's error ends the job.
  rule="$call:rank-00001-of-00002.ckpt:3:rank=1"
  expect_failure "save-$call" "$rule,$rule:delay=2000" --steps 40 --save-every 2 \
    --checkpoint-dir "$ck" --trace "$tr"
  grep -F "[rank 1]" "$work/save-$call.txt" | grep -q -F -- "$file.tmp" ||
    fail "save-$call: rank 1 did not report the file: $(cat "$work/save-$call.txt")"
  grep -q -F "($call): Input/output error" "$work/save-$call.txt" ||
    fail "save-$call: the failing call is not named: $(cat "$work/save-$call.txt")"
  [ ! -e "$file" ] && [ ! -e "$file.tmp" ] || fail "save-$call: rank 1 left a file in step 6"
  [ -f "$ck/step-4/loader/rank-00001-of-00002.ckpt" ] || fail "save-$call: step 4 is gone"
  # The newest step both ranks saved: 4.
  newest=$(timeout 60 "$STOKER" steps "$ck" --newest | cut -f1)
  [ "$newest" = 4 ] || fail "save-$call: the newest complete step is" \
    "'$newest': $(ls -R "$ck")"
  timeout 60 $MPIRUN -np 2 "$STOKER" run "${common[@]}" --checkpoint-dir "$ck" --resume \
    --steps 10 --trace "$tr" --dump "$work/dump-$call" > "$work/resume-$call.txt" 2>&1 ||
    fail "save-$call: --resume failed: $(cat "$work/resume-$call.txt")"
  for r in 0 1; do
    [ "$(stat -c %s "$work/dump-$call/rank-$r.bin")" = $(((10 - newest) * batch_bytes)) ] ||
      fail "save-$call: rank $r did not resume from step $newest"
  done
  timeout 60 "$STOKER" audit "$tr" > "$work/audit-$call.txt" 2>&1 ||
    fail "save-$call: audit: $(cat "$work/audit-$call.txt")"
  echo "ok: a failing $call of rank 1's step-6 file:" \
       "$(grep -m1 -F "($call)" "$work/save-$call.txt" | cut -c1-160)..."
  echo "ok:   --resume went on from step $newest; audit clean"
done

# --- A read error in a shard: named with its file, dataset and byte offset. ---
expect_failure read "pread:a/part-00001.h5:6" --steps 400
pattern="a/part-00001.h5 \(dataset a\): reading /(tokens|doc_offsets)\[[0-9]+\.\.\.\] failed"
pattern+=" \(pread of [0-9]+ bytes at byte offset [0-9]+\): Input/output error"
grep -Eq "$pattern" "$work/read.txt" ||
  fail "read: the error does not name the file and offset: $(cat "$work/read.txt")"
echo "ok: a failing pread: $(grep -m1 -o 'a/part-00001.h5 (dataset a).*' "$work/read.txt")"

# --- The same read error on a run of one rank: one line, and no MPI_Abort banner (nobody waits). ---
rc=0
STOKER_FAULTS="pread:a/part-00001.h5:6" timeout 60 "$STOKER" run "${common[@]}" --steps 400 \
  > "$work/read1.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "read on 1 rank: exit code $rc, not 1: $(cat "$work/read1.txt")"
[ "$(grep -c "\[error\]" "$work/read1.txt")" = 1 ] && grep -Eq "$pattern" "$work/read1.txt" ||
  fail "read on 1 rank: not one error line naming the file and offset: $(cat "$work/read1.txt")"
! grep -q "MPI_ABORT" "$work/read1.txt" || fail "read on 1 rank: the MPI_Abort banner"
echo "ok: the same on 1 rank: one error line, exit code 1, no MPI_Abort banner"

# --- A bad plan. ---
rc=0
STOKER_FAULTS="fsync:x:soon" "$STOKER" run "${common[@]}" --steps 1 > "$work/bad.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "STOKER_FAULTS: fault rule 'fsync:x:soon'" "$work/bad.txt" ||
  fail "a bad STOKER_FAULTS (exit $rc): $(cat "$work/bad.txt")"
echo "ok: a bad STOKER_FAULTS: $(cat "$work/bad.txt")"
