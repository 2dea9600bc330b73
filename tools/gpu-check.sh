#!/usr/bin/env bash
# Prepared GPU check for the replay's CUDA backend on one H200 (sm_90): Release build with CUDA,
# the cuda-labelled tests, then the same schedules replayed on the CPU and on the GPU and the two
# summaries compared, and a replay on the GPU without the graph guard (the no-graph-guard mutant)
# that must diverge. Prints one summary line; exits non-zero on any failure. Budget: 5 minutes.
#
# Usage: tools/gpu-check.sh [--prebuilt] [BUILD_DIR]   (default build-gpu; results under BUILD_DIR/gpu-check)
# The machine needs the project's C++ dependencies (nlohmann-json, CLI11, Boost.Graph, GTest,
# RapidCheck); KVCHECK_GPU_CMAKE_ARGS passes extra CMake arguments, e.g. a CMAKE_PREFIX_PATH
# pointing at carried copies. A GPU machine without them runs binaries built for sm_90 elsewhere
# (any machine with nvcc): --prebuilt skips configure and build and uses BUILD_DIR/kvcheck and
# BUILD_DIR/tests/*_cuda_test as they are (the CUDA runtime is linked statically; only the
# driver is needed).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
prebuilt=false
if [[ ${1:-} == --prebuilt ]]; then
    prebuilt=true
    shift
fi
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
command -v python3 >/dev/null || fail "python3 is needed to compare the summaries"

step_started=$SECONDS
took() { echo "gpu-check: $1 took $((SECONDS - step_started)) s"; step_started=$SECONDS; }

if $prebuilt; then
    [[ -x $build/kvcheck ]] || fail "--prebuilt: no $build/kvcheck"
    compgen -G "$build/tests/*_cuda_test" >/dev/null || fail "--prebuilt: no $build/tests/*_cuda_test"
    echo "gpu-check: prebuilt binaries in $build"
    # The test executables run directly: CTest files name the paths of the machine that built them.
    : >"$build.ctest.log"
    for test in "$build"/tests/*_cuda_test; do
        within_budget "$test" >>"$build.ctest.log" 2>&1 || { tail -40 "$build.ctest.log"; fail "cuda tests ($test)"; }
    done
else
    nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    [[ -x $nvcc ]] || fail "no nvcc found (set CUDACXX, or build elsewhere and run with --prebuilt)"
    echo "gpu-check: configure (Release, CUDA, sm_90) in $build"
    within_budget cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVCHECK_CUDA=ON -DKVCHECK_BENCH=OFF \
        -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 ${KVCHECK_GPU_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 ||
        { tail -20 "$build.configure.log"; fail "configure (missing C++ dependencies? see $build.configure.log; or build on a machine with nvcc and run with --prebuilt, docs/replay.md)"; }
    grep -q "kvcheck_replay: CUDA backend enabled" "$build.configure.log" || fail "CMake did not enable the CUDA backend"

    echo "gpu-check: build"
    within_budget ninja -C "$build" kvcheck replay_test replay_cuda_test >"$build.build.log" 2>&1 ||
        { tail -30 "$build.build.log"; fail "build"; }
    took build

    echo "gpu-check: cuda-labelled tests"
    within_budget ctest --test-dir "$build" -L cuda -V >"$build.ctest.log" 2>&1 ||
        { tail -40 "$build.ctest.log"; fail "cuda tests"; }
    grep -q "No tests were found" "$build.ctest.log" && fail "no cuda-labelled tests were found"
fi
# A skipped GPU test means the device was not usable: that is a failure here.
grep -q "SKIPPED" "$build.ctest.log" && { grep -A2 "SKIPPED" "$build.ctest.log" | head; fail "cuda tests skipped"; }
grep -q "PASSED" "$build.ctest.log" || fail "no cuda test passed"
grep -h "cpu-vs-gpu" "$build.ctest.log" || true
took "cuda tests"

rm -rf "$out"
mkdir -p "$out/schedules"
if [[ -f scenarios/quickstart.json ]]; then
    # The quickstart's first 120 requests (28 resumes, prompts up to 123,872 tokens): replay time
    # grows with the square of the prompt, and all 400 requests (200 schedules, 5x the work) take
    # longer than the budget on either backend. `run` exits 1 when the scenario finds violations;
    # the schedules are written either way.
    within_budget "$build/kvcheck" run scenarios/quickstart.json --set /workload/limit=120 --out "$out/run" \
        --export-schedules "$out/exported" >"$out/run.log" 2>&1 || true
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
replay() {
    local name=$1
    shift
    within_budget "$build/kvcheck" replay --json "$@" >"$out/$name.json" 2>"$out/$name.err"
    local rc=$?
    ((rc == 124)) && fail "out of time during the $name replay"
    ((rc == 2)) && { cat "$out/$name.err"; fail "$name replay: bad input or no device"; }
    ((rc == 0 || rc == 1)) || { cat "$out/$name.err"; fail "$name replay exited $rc"; }
    took "$name replay"
    return "$rc"
}
replay cpu "$out/schedules" --backend cpu --jobs "$(nproc)"
cpu_rc=$?
replay cuda "$out/schedules" --backend cuda
cuda_rc=$?
# The no-graph-guard mutant on the GPU: the examples and the 10 smallest exported schedules (every
# quickstart resume reloads, so each moves a buffer under the decode graph captured at start-up).
mkdir -p "$out/noguard"
cp cuda_replay/examples/*.json "$out/noguard/"
find "$out/exported" -name '*.json' -printf '%s %p\n' 2>/dev/null | sort -n | head -10 | cut -d' ' -f2- | xargs -r cp -t "$out/noguard/"
replay noguard "$out/noguard" --backend cuda --no-graph-guard

python3 - "$out" "$cpu_rc" "$cuda_rc" "$exported" <<'EOF'
import json, os, sys
out = sys.argv[1]
cpu, gpu, unguarded = (json.load(open(os.path.join(out, n + ".json"))) for n in ("cpu", "cuda", "noguard"))
cpu_rc, gpu_rc, exported = (int(x) for x in sys.argv[2:5])
def line(s):
    a = s["oracle_agreement"]
    return (f"bit_exact={s['bit_exact']} diverged={s['diverged']} agree={a['agree']} "
            f"false_alarm={a['false_alarm']} miss={a['miss']} recaptures={s['recaptures']}")
verdicts = lambda s: [(os.path.basename(r["schedule"]), r["bit_exact"]) for r in s["results"]]
same_verdicts = verdicts(cpu) == verdicts(gpu)
same_refs = sum(a["reference_hash"] == b["reference_hash"] for a, b in zip(cpu["results"], gpu["results"]))
# Without the graph guard, a schedule that is bit exact with it and reloads a buffer may diverge
# only at its first decode step with a correct cache (form compute) and no recapture; one that
# reloads nothing must stay bit exact; at least one must diverge.
guarded = dict(verdicts(gpu))
first = {os.path.basename(d["schedule"]): d for d in unguarded["divergences"]}
reloaded = stale = 0
problems = []
for r in unguarded["results"]:
    name = os.path.basename(r["schedule"])
    schedule = json.load(open(r["schedule"]))
    reloads = any("load" in read.get("transport", []) for read in schedule["reads"])
    if not guarded[name]:
        continue
    if not reloads:
        if not r["bit_exact"]:
            problems.append(f"{name} diverged without the guard but reloads nothing")
        continue
    reloaded += 1
    if r["bit_exact"]:
        continue
    stale += 1
    d = first[name]
    prompt = len(schedule["tokens"]) if isinstance(schedule["tokens"], list) else d["position"]
    if d["form"] != "compute" or r["recaptures"] != 0 or d["position"] != prompt:
        problems.append(f"{name}: form {d['form']} at {d['position']}, recaptures {r['recaptures']}")
if stale == 0:
    problems.append("no schedule diverged without the graph guard")
# Oracle disagreements are the simulator's findings and show in both lines; the check fails when
# the GPU disagrees with the CPU about which schedules are bit exact, or the mutant does not show.
ok = same_verdicts and cpu_rc == gpu_rc and not problems
print(f"gpu-check: {'PASS' if ok else 'FAIL'} schedules={cpu['schedules']} (exported={exported}) "
      f"| cpu: {line(cpu)} | cuda: {line(gpu)} | verdicts {'equal' if same_verdicts else 'DIFFER'}, "
      f"cpu-vs-gpu reference bits equal in {same_refs} of {cpu['schedules']} "
      f"| no-graph-guard: {stale} of {reloaded} bit-exact reloaded schedules diverge at their first decode step")
for p in problems:
    print("gpu-check: " + p)
sys.exit(0 if ok else 1)
EOF
