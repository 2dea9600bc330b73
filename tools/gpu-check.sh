#!/usr/bin/env bash
# Prepared GPU check for the replay's CUDA backend on one H200 (sm_90): Release build with CUDA,
# the cuda-labelled tests, then the same schedules replayed on the CPU and on the GPU and the two
# summaries compared. Prints one summary line; exits non-zero on any failure. Budget: 5 minutes.
#
# Usage: tools/gpu-check.sh [BUILD_DIR]   (default build-gpu; results under BUILD_DIR/gpu-check)
# The machine needs the project's C++ dependencies (nlohmann-json, CLI11, Boost.Graph, GTest,
# RapidCheck); KVCHECK_GPU_CMAKE_ARGS passes extra CMake arguments, e.g. a CMAKE_PREFIX_PATH
# pointing at carried copies.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
build=${1:-build-gpu}
out=$build/gpu-check
deadline=$((SECONDS + 285))

fail() {
    echo "gpu-check: FAIL: $*"
    exit 1
}

# Runs a command with what is left of the 5-minute budget.
within_budget() {
    local left=$((deadline - SECONDS))
    ((left > 5)) || fail "out of time before: $*"
    timeout "$left" "$@"
}

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader ||
    fail "no GPU visible (nvidia-smi)"
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || fail "no nvcc found (set CUDACXX)"
command -v python3 >/dev/null || fail "python3 is needed to compare the summaries"

echo "gpu-check: configure (Release, CUDA, sm_90) in $build"
within_budget cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVCHECK_CUDA=ON -DKVCHECK_BENCH=OFF \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 ${KVCHECK_GPU_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 ||
    { tail -20 "$build.configure.log"; fail "configure (missing C++ dependencies? see $build.configure.log)"; }
grep -q "kvcheck_replay: CUDA backend enabled" "$build.configure.log" || fail "CMake did not enable the CUDA backend"

echo "gpu-check: build"
within_budget ninja -C "$build" kvcheck replay_test replay_cuda_test >"$build.build.log" 2>&1 ||
    { tail -30 "$build.build.log"; fail "build"; }

echo "gpu-check: cuda-labelled tests"
within_budget ctest --test-dir "$build" -L cuda -V >"$build.ctest.log" 2>&1 ||
    { tail -40 "$build.ctest.log"; fail "cuda tests"; }
grep -q "No tests were found" "$build.ctest.log" && fail "no cuda-labelled tests were found"
# A skipped GPU test means the device was not usable: that is a failure here.
grep -q "SKIPPED" "$build.ctest.log" && { grep -A2 "SKIPPED" "$build.ctest.log" | head; fail "cuda tests skipped"; }
grep -h "cpu-vs-gpu" "$build.ctest.log" || true

rm -rf "$out"
mkdir -p "$out/schedules"
if [[ -f scenarios/quickstart.json ]]; then
    # `run` exits 1 when the scenario finds violations; the schedules are written either way.
    within_budget "$build/kvcheck" run scenarios/quickstart.json --out "$out/run" --export-schedules "$out/exported" \
        >"$out/run.log" 2>&1 || true
fi
exported=0
if compgen -G "$out/exported/*.json" >/dev/null; then
    cp "$out"/exported/*.json "$out/schedules/"
    exported=$(find "$out/exported" -name '*.json' | wc -l)
else
    echo "gpu-check: no exported schedules (scenario or --export-schedules absent); replaying the examples only"
fi
cp cuda_replay/examples/*.json "$out/schedules/"

# The CPU replay runs independent schedules on every core (the results do not depend on --jobs).
within_budget "$build/kvcheck" replay "$out/schedules" --backend cpu --json --jobs "$(nproc)" >"$out/cpu.json" 2>"$out/cpu.err"
cpu_rc=$?
within_budget "$build/kvcheck" replay "$out/schedules" --backend cuda --json >"$out/cuda.json" 2>"$out/cuda.err"
cuda_rc=$?
((cpu_rc == 2)) && { cat "$out/cpu.err"; fail "cpu replay: bad input"; }
((cuda_rc == 2)) && { cat "$out/cuda.err"; fail "cuda replay: bad input or no device"; }

python3 - "$out/cpu.json" "$out/cuda.json" "$cpu_rc" "$cuda_rc" "$exported" <<'EOF'
import json, sys
cpu, gpu = (json.load(open(p)) for p in sys.argv[1:3])
cpu_rc, gpu_rc, exported = (int(x) for x in sys.argv[3:6])
def line(s):
    a = s["oracle_agreement"]
    return (f"bit_exact={s['bit_exact']} diverged={s['diverged']} agree={a['agree']} "
            f"false_alarm={a['false_alarm']} miss={a['miss']} recaptures={s['recaptures']}")
verdicts = lambda s: [(r["schedule"], r["bit_exact"]) for r in s["results"]]
same_verdicts = verdicts(cpu) == verdicts(gpu)
same_refs = sum(a["reference_hash"] == b["reference_hash"] for a, b in zip(cpu["results"], gpu["results"]))
# Oracle disagreements are the simulator's findings and show in both lines; the check fails only
# when the GPU disagrees with the CPU about which schedules are bit exact.
ok = same_verdicts and cpu_rc == gpu_rc
print(f"gpu-check: {'PASS' if ok else 'FAIL'} schedules={cpu['schedules']} (exported={exported}) "
      f"| cpu: {line(cpu)} | cuda: {line(gpu)} | verdicts {'equal' if same_verdicts else 'DIFFER'}, "
      f"cpu-vs-gpu reference bits equal in {same_refs} of {cpu['schedules']}")
sys.exit(0 if ok else 1)
EOF
