#!/usr/bin/env bash
#SBATCH --job-name=kvcheck-fuzz
#SBATCH --array=0-15
#SBATCH --cpus-per-task=2
#SBATCH --mem=1G
#SBATCH --time=02:00:00
#SBATCH --signal=B:TERM@60
#SBATCH --requeue
#SBATCH --output=kvcheck-fuzz-%A_%a.log
# A sharded fuzz campaign as a Slurm job array: array task i runs shard i of the array's size
# (docs/sharding.md). Submit from the repository root after building build/kvcheck; merge the
# shards with a dependent job once every task is done.
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-.}"
index=$((SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN))
count="${SLURM_ARRAY_TASK_COUNT}"
out="${KVCHECK_CAMPAIGN:-runs/fuzz-seed42}"
exec docs/examples/fuzz-shard.sh "$index" "$count" "$out" \
  --seed 42 --walks 50000 --threads "${SLURM_CPUS_PER_TASK:-1}" --keep-going
