#include "sim/des/steps_run.hpp"

#include <memory>
#include <stdexcept>

#include "model/driver.hpp"
#include "model/fault_class.hpp"
#include "model/invariants.hpp"
#include "model/state_hash.hpp"
#include "sim/check/trail.hpp"
#include "sim/des/schedules.hpp"
#include "sim/io/input_error.hpp"

namespace kvcheck::sim {

namespace {

// Replays the steps once more with the exporter watching, as the simulator's engine feeds it: the
// requests' prompts, each fault with the content it touched, each load that landed (torn or
// whole), and each read that resumed from cache with the violations it raised.
std::uint64_t export_steps(const Scenario& s, const model::Defenses& defenses, ScheduleExporter& exporter) {
    model::World w = initial_world(s.scope, defenses);
    model::Driver driver(false);
    std::uint64_t number = 0;
    for (const model::Step& step : s.steps) {
        ++number;
        for (const model::Request& q : w.requests)
            if (q.spec) exporter.remember(q.spec);
        const std::optional<model::FaultClass> fault = model::fault_class_of(step.kind);
        const std::string what = fault ? model::describe(w, step) : std::string();
        const bool on_io = model::target_of(step.kind) == model::StepTarget::io;
        const model::IoOp op = on_io && step.target < w.io.size() ? w.io[step.target] : model::IoOp{};
        driver.step(w, step);
        if (fault) exporter.note_fault(w, step, *fault, what, number);
        const bool loaded = on_io && op.live && op.kind == model::IoKind::load &&
                            w.segments[op.segment].stage != model::Stage::on_disk &&
                            step.kind != model::StepKind::io_fail;
        if (loaded) exporter.note_loaded(op.segment, w.segments[op.segment].epoch);
        if (loaded && step.kind == model::StepKind::partial_load)
            exporter.note_torn(op.segment, w.segments[op.segment].epoch);
        if (step.kind == model::StepKind::read && w.requests[step.target].resume_len > 0)
            exporter.export_read(w, step.target, driver.facts(), driver.violations());
    }
    return number;
}

}  // namespace

RunResult run_steps(const Scenario& s, const RunOptions& o) {
    RunResult result;
    const std::string policy = o.policy.empty() ? s.policy : o.policy;
    const model::Defenses& defenses = model::find_policy(policy)->defenses;
    TrailResult trail;
    try {
        trail = replay_trail(s.scope, defenses, s.steps, false);
    } catch (const std::invalid_argument& warm_up) {  // a warm request that cannot warm up under this policy
        throw InputError(s.path, "/scope/requests", warm_up.what());
    }
    if (!trail.valid)
        throw InputError(s.path, "/steps/" + std::to_string(trail.steps_applied),
                         "this step is not enabled at that point of the trail (the scenario does not replay)");
    for (const model::Violation& v : trail.violations) {
        if (result.metrics.invariant_violations[v.invariant]++ == 0)
            result.metrics.first_violation[v.invariant] = v.message;
        if (model::corrupts_output(v.invariant)) result.metrics.silent_corruptions = 1;
    }
    result.metrics.events = trail.steps_applied;
    const std::uint64_t seed = o.seed_given ? o.seed : s.seed;
    result.info = {s.name, s.preset, policy, seed, 0, 0, override_texts(s)};
    model::World w = initial_world(s.scope, defenses);
    for (const model::Step& st : s.steps) model::apply(w, st);
    result.info.final_state_hash = model::state_hash(w);
    if (!o.schedules_dir.empty()) {
        ScheduleExporter exporter(o.schedules_dir, s, policy, seed);
        export_steps(s, defenses, exporter);
        exporter.finish();
        result.schedules_written = exporter.written();
    }
    return result;
}

}  // namespace kvcheck::sim
