#!/usr/bin/env bash
# Runs shard INDEX of COUNT of a fuzz campaign into OUT/shard-INDEX/ (fuzz.json, plus
# counterexample.json when a walk fails), for a batch engine: Kubernetes Indexed Jobs, Slurm job
# arrays, CI matrices. Usage: fuzz-shard.sh INDEX COUNT OUT [kvcheck fuzz options...]
set -euo pipefail
if [ "$#" -lt 3 ]; then
  echo "usage: fuzz-shard.sh INDEX COUNT OUT [kvcheck fuzz options...]" >&2
  exit 2
fi
index="$1" count="$2" out="$3"
shift 3
kvcheck="${KVCHECK:-$(command -v kvcheck || echo build/kvcheck)}"
dir="$out/shard-$index"
resume=()
if [ -f "$dir/fuzz.json" ]; then
  if grep -q '"interrupted": true' "$dir/fuzz.json"; then
    resume=(--resume "$dir/fuzz.json")  # a preempted or evicted task continues where it stopped
  else
    echo "shard $index/$count already done: $dir/fuzz.json"
    exit 0
  fi
fi
# kvcheck runs in the background so that a SIGTERM (pod eviction, Slurm preemption or time limit)
# reaches it: it then writes fuzz.json with "interrupted": true, and the retried task resumes.
"$kvcheck" fuzz --shard "$index/$count" --out "$dir" --quiet "${resume[@]}" "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM INT
status=0
wait "$pid" || status=$?
if [ "$status" -gt 128 ] && kill -0 "$pid" 2>/dev/null; then
  status=0
  wait "$pid" || status=$?  # the trap ran: wait for kvcheck to write fuzz.json and stop
fi
# 2 is bad input (a flag of another campaign, a damaged fuzz.json): retrying cannot help.
if [ "$status" -eq 2 ]; then exit 2; fi
if grep -q '"interrupted": true' "$dir/fuzz.json" 2>/dev/null; then
  echo "shard $index/$count interrupted; run this task again to resume it" >&2
  exit 143
fi
# 1 means this shard found a violation: fuzz.json and counterexample.json are written and
# `kvcheck merge` reports it, so the task itself succeeded.
if [ "$status" -gt 1 ]; then exit "$status"; fi
exit 0
