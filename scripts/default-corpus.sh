#!/usr/bin/env bash
# Makes stoker's embedded default corpus from real text that every Debian system carries, packed
# with the built-in byte-level tokenizer (stoker pack --format text: one file, one document):
#   OUT/licenses   the license texts under /usr/share/common-licenses
#   OUT/copyright  the packages' copyright files, /usr/share/doc/*/copyright
#   OUT/headers    C headers, /usr/include/*.h (C code: the compiler's packages bring them)
# Usage: scripts/default-corpus.sh OUT [RANKS]   (RANKS: mpirun ranks that pack, default 2)
# Environment: STOKER (the program, default build/stoker), STOKER_CORPUS_MAX_FILES (take at most
# this many files per dataset, in sorted order; default all).
set -euo pipefail
out=$(realpath -m "${1:?usage: scripts/default-corpus.sh OUT [RANKS]}")
ranks=${2:-2}
cd "$(dirname "$0")/.."
stoker=${STOKER:-build/stoker}
max=${STOKER_CORPUS_MAX_FILES:-0}
[ -f scripts/env.sh ] && source scripts/env.sh

# Regular, readable, non-empty files; a file reached through two symlinked folders counts once.
# (The tests are bash's own; one realpath resolves them all: a process per file cost seconds.)
list_files() {
  local f kept=()
  for f in "$@"; do
    [ -f "$f" ] && [ -r "$f" ] && [ -s "$f" ] && kept+=("$f")
  done
  [ ${#kept[@]} -gt 0 ] || return 0
  realpath -- "${kept[@]}" | sort -u | { if [ "$max" -gt 0 ]; then head -n "$max"; else cat; fi; }
}

pack() {
  local name=$1; shift
  local files
  mapfile -t files < <(list_files "$@")
  if [ ${#files[@]} -lt "$ranks" ]; then
    echo "default-corpus: only ${#files[@]} files for dataset $name (need at least $ranks): $*" >&2
    exit 1
  fi
  echo "default-corpus: $name: ${#files[@]} files"
  mpirun -np "$ranks" "$stoker" --quiet pack --format text --force --out "$out/$name" "${files[@]}"
}

mkdir -p "$out"
pack licenses /usr/share/common-licenses/*
pack copyright /usr/share/doc/*/copyright
pack headers /usr/include/*.h
