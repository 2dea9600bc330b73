// The case driver of the model's RapidCheck properties (model_property_test.cpp): a drawn scope,
// a drawn sequence of step choices, one run of the model under it with the invariants checked
// after every step, and a RapidCheck search over such cases.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "model/core.hpp"
#include "model/driver.hpp"
#include "model/invariants.hpp"
#include "model/policy.hpp"
#include "model/steps.hpp"
#include "sim/check/scope.hpp"
#include "sim/check/trail.hpp"

namespace {

namespace model = kvcheck::model;
namespace sim = kvcheck::sim;
using model::StepKind;

// The fault kinds a scope may switch on, one bit each in ScopeDraw::fault_mask. F2's two modes
// share io_fail's bit: a partial load is switched on with it (build_scope).
constexpr StepKind kFaultKinds[] = {
    StepKind::io_fail,       StepKind::interrupt_eviction, StepKind::skew_index, StepKind::bump_model_version,
    StepKind::change_layout, StepKind::misaligned_reload,  StepKind::migrate,    StepKind::lose_block};
constexpr std::uint32_t kFaultKindCount = sizeof(kFaultKinds) / sizeof(kFaultKinds[0]);

// Steps taken after the last drawn integer, at most: enough for three requests to finish.
constexpr std::size_t kTailSteps = 200;

struct RequestDraw {
    std::uint32_t parent = 0;         // the earlier request whose prompt it starts with
    std::uint32_t shared_blocks = 0;  // 16-token content blocks shared with the parent (clamped)
    std::uint32_t prompt_blocks = 2;  // 2..8 blocks: prompts of 32..128 tokens
    std::uint32_t output_tokens = 0;  // 0, 8, 16, 24 or 32
    std::uint32_t arrival_step = 0;   // its first lookup waits until this step (or until nothing else can run)
};

struct ScopeDraw {
    std::vector<RequestDraw> requests;
    std::uint32_t budget_bytes = 0;
    std::uint32_t fault_mask = 0;
    std::uint32_t max_faults = 0;
    std::uint32_t max_background = 0;
    std::uint32_t rollout = 0;                     // 0 cross_request, 1 intra_request, 2 off
    std::array<std::uint32_t, 5> actor_weights{};  // request, io, background, fault, config (see pick_step)
    std::uint32_t extent_tokens = 0;               // model::Limits::extent_tokens: 0, or 64 or 128 (gen_extents)
    std::uint32_t tier_bytes = 0;  // host/disk capacity: 0 for the default (never full), else a few entries' worth
    bool tier_eviction = false;    // model::Limits::tier_eviction
    std::uint32_t host_bytes = 0;  // model::Limits::host_capacity_bytes: 0 (every copy on disk) or a few entries' worth
    bool stop_waiting = false;     // requests may stop waiting on their loads (a driver's timeout)
    bool abort = false;            // requests may end at their loads (a driver's load-failure policy)
};

void showValue(const ScopeDraw& d, std::ostream& os) {
    os << "budget_bytes=" << d.budget_bytes << " max_faults=" << d.max_faults << " max_background=" << d.max_background
       << " rollout=" << d.rollout << " weights={" << d.actor_weights[0] << "," << d.actor_weights[1] << ","
       << d.actor_weights[2] << "," << d.actor_weights[3] << "," << d.actor_weights[4]
       << "} extent_tokens=" << d.extent_tokens << " tier_bytes=" << d.tier_bytes
       << " tier_eviction=" << d.tier_eviction << " host_bytes=" << d.host_bytes << " stop_waiting=" << d.stop_waiting
       << " abort=" << d.abort << " faults={";
    for (std::uint32_t i = 0; i < kFaultKindCount; ++i)
        if ((d.fault_mask >> i) & 1u) os << model::step_kind_name(kFaultKinds[i]) << " ";
    os << "} requests=[";
    for (const RequestDraw& r : d.requests)
        os << "{parent=" << r.parent << " shared=" << r.shared_blocks << " prompt=" << r.prompt_blocks * 16
           << " output=" << r.output_tokens << " arrival=" << r.arrival_step << "} ";
    os << "]";
}

rc::Gen<RequestDraw> gen_request() {
    return rc::gen::build<RequestDraw>(
        rc::gen::set(&RequestDraw::parent, rc::gen::inRange<std::uint32_t>(0, 2)),
        rc::gen::set(&RequestDraw::shared_blocks, rc::gen::inRange<std::uint32_t>(0, 9)),
        rc::gen::set(&RequestDraw::prompt_blocks, rc::gen::inRange<std::uint32_t>(2, 9)),
        rc::gen::set(&RequestDraw::output_tokens,
                     rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 5), [](std::uint32_t k) { return k * 8; })),
        rc::gen::set(&RequestDraw::arrival_step, rc::gen::inRange<std::uint32_t>(0, 41)));
}

// Swarm over the actors' weights: a scope gives the I/O engine, the background actor and the fault
// injector a low, medium or high share beside the request workers' 128, and the version/config
// changer a smaller one (its steps are enabled from the first step on; see pick_step).
rc::Gen<std::uint32_t> gen_weight() { return rc::gen::element<std::uint32_t>(40, 12, 120); }
rc::Gen<std::uint32_t> gen_config_weight() { return rc::gen::element<std::uint32_t>(12, 4, 40); }

// vary_rollout: also draw the rollout mode (cross_request, where reuse happens, stays the most likely).
rc::Gen<ScopeDraw> gen_scope(bool vary_rollout) {
    return rc::gen::build<ScopeDraw>(
        rc::gen::set(&ScopeDraw::requests, rc::gen::mapcat(rc::gen::inRange<std::size_t>(2, 4),
                                                           [](std::size_t n) {
                                                               return rc::gen::container<std::vector<RequestDraw>>(
                                                                   n, gen_request());
                                                           })),
        rc::gen::set(&ScopeDraw::budget_bytes, rc::gen::inRange<std::uint32_t>(20'000, 200'001)),
        rc::gen::set(&ScopeDraw::fault_mask, rc::gen::inRange<std::uint32_t>(0, 1u << kFaultKindCount)),
        rc::gen::set(&ScopeDraw::max_faults, rc::gen::inRange<std::uint32_t>(1, 4)),
        rc::gen::set(&ScopeDraw::max_background, rc::gen::inRange<std::uint32_t>(0, 4)),
        rc::gen::set(&ScopeDraw::actor_weights,
                     rc::gen::construct<std::array<std::uint32_t, 5>>(rc::gen::just<std::uint32_t>(128), gen_weight(),
                                                                      gen_weight(), gen_weight(), gen_config_weight())),
        rc::gen::set(&ScopeDraw::rollout, vary_rollout
                                              ? rc::gen::weightedElement<std::uint32_t>({{6, 0}, {1, 1}, {1, 2}})
                                              : rc::gen::just<std::uint32_t>(0)),
        // A small tier fills after a few offloads; with tier eviction it then drops entries.
        rc::gen::set(&ScopeDraw::tier_bytes,
                     rc::gen::weightedElement<std::uint32_t>({{2, 0}, {1, 1'000}, {1, 4'000}, {1, 12'000}})),
        rc::gen::set(&ScopeDraw::tier_eviction, rc::gen::arbitrary<bool>()),
        // Host memory for one or a few copies: later offloads move the earlier ones to disk.
        rc::gen::set(&ScopeDraw::host_bytes, rc::gen::weightedElement<std::uint32_t>({{2, 0}, {1, 600}, {1, 3'000}})),
        rc::gen::set(&ScopeDraw::stop_waiting, rc::gen::arbitrary<bool>()),
        rc::gen::set(&ScopeDraw::abort, rc::gen::arbitrary<bool>()));
}

// The same scopes with extents: entries of up to 64 or 128 tokens (four or eight 16-token blocks;
// one or two 64-token compressed segments of the toy preset's c4 group).
rc::Gen<ScopeDraw> gen_extents(bool vary_rollout) {
    return rc::gen::mapcat(gen_scope(vary_rollout), [](ScopeDraw d) {
        return rc::gen::map(rc::gen::element<std::uint32_t>(64, 128), [d](std::uint32_t tokens) {
            ScopeDraw with = d;
            with.extent_tokens = tokens;
            return with;
        });
    });
}

sim::Scope build_scope(const ScopeDraw& d) {
    sim::Scope s;
    s.name = "property";
    s.model = *model::find_preset("toy");
    s.content_block_tokens = 16;
    s.limits.gpu_budget_bytes = d.budget_bytes;
    s.limits.extent_tokens = d.extent_tokens;
    if (d.tier_bytes > 0) s.limits.disk_capacity_bytes = d.tier_bytes;
    s.limits.tier_eviction = d.tier_eviction;
    s.limits.host_capacity_bytes = d.host_bytes;
    s.rollout = d.rollout == 1   ? model::Rollout::intra_request
                : d.rollout == 2 ? model::Rollout::off
                                 : model::Rollout::cross_request;
    s.step_kinds = sim::actor_kinds() | sim::background_kinds();
    for (std::uint32_t i = 0; i < kFaultKindCount; ++i)
        if ((d.fault_mask >> i) & 1u) s.step_kinds |= model::kind_bit(kFaultKinds[i]);
    if ((s.step_kinds & model::kind_bit(StepKind::io_fail)) != 0)
        s.step_kinds |= model::kind_bit(StepKind::partial_load);
    if (d.stop_waiting) s.step_kinds |= model::kind_bit(StepKind::stop_waiting);
    if (d.abort) s.step_kinds |= model::kind_bit(StepKind::abort);
    s.max_faults = static_cast<std::uint8_t>(d.max_faults);
    s.max_background = static_cast<std::uint8_t>(d.max_background);
    std::vector<std::vector<std::uint64_t>> prompts;
    for (std::size_t i = 0; i < d.requests.size(); ++i) {
        const RequestDraw& r = d.requests[i];
        std::vector<std::uint64_t> ids;
        const std::vector<std::uint64_t>* parent = i == 0 ? nullptr : &prompts[std::min<std::size_t>(r.parent, i - 1)];
        const std::size_t shared = parent == nullptr ? 0 : std::min<std::size_t>(r.shared_blocks, parent->size());
        for (std::size_t b = 0; b < r.prompt_blocks; ++b) ids.push_back(b < shared ? (*parent)[b] : 1000 * (i + 1) + b);
        prompts.push_back(ids);
        s.requests.push_back({ids, r.prompt_blocks * 16, r.output_tokens});
    }
    return s;
}

// A drawn byte picks a step in three levels. First the actor: the byte is scaled onto the weights
// of the actors that have an enabled step (request workers 128; the I/O engine, the background
// evictor/offloader, the segment fault injector and the version/config changer of F5 as the scope
// drew them; each fault actor has its own fault budget, see allowed_kinds). Within the request
// workers' share, the lower three quarters advance the earliest unfinished request, so requests
// mostly run one after another, as arrivals do, and sometimes interleave; a request then often
// finds its predecessor's cache complete and exposed to background work and faults. The I/O engine
// picks an in-flight operation and its outcome: success half of the time, otherwise one of the
// I/O faults the scope enables (F2 failure or partial load, F9 misaligned reload), as a storage tier fails at
// completion. The other actors pick a step kind uniformly, then a target: an offload is as likely
// as an eviction, and a rare fault kind as likely as one with many targets. Shrinking a byte
// towards 0 makes it the default step (the earliest request's next step), so a shrunk sequence
// keeps only its deviations.
enum class Actor : std::uint8_t { request, io, background, fault, config };
constexpr std::size_t kActorCount = 5;

Actor actor_of(StepKind kind) {
    if (model::target_of(kind) == model::StepTarget::io) return Actor::io;
    if (kind == StepKind::bump_model_version || kind == StepKind::change_layout) return Actor::config;
    if (model::is_fault(kind)) return Actor::fault;
    if (sim::is_background(kind)) return Actor::background;
    return Actor::request;
}

std::size_t pick_step(const std::vector<model::Step>& enabled, const std::array<std::uint32_t, kActorCount>& weights,
                      std::uint8_t choice) {
    std::array<std::vector<std::size_t>, kActorCount> by_actor;
    for (std::size_t i = 0; i < enabled.size(); ++i)
        by_actor[static_cast<std::size_t>(actor_of(enabled[i].kind))].push_back(i);
    std::uint32_t total = 0;
    for (std::size_t a = 0; a < kActorCount; ++a) total += by_actor[a].empty() ? 0 : weights[a];
    std::uint32_t point = std::uint32_t{choice} * total / 256;
    std::size_t a = 0;
    while (by_actor[a].empty() || point >= weights[a]) {
        if (!by_actor[a].empty()) point -= weights[a];
        ++a;
    }
    const std::vector<std::size_t>& members = by_actor[a];
    const std::uint64_t h = kvcheck::mix64(choice);
    switch (static_cast<Actor>(a)) {
        case Actor::request: return point < weights[a] / 4 * 3 ? members.front() : members[choice % members.size()];
        case Actor::io: {
            std::vector<std::uint32_t> ops;
            for (std::size_t i : members)
                if (std::find(ops.begin(), ops.end(), enabled[i].target) == ops.end()) ops.push_back(enabled[i].target);
            const std::uint32_t op = ops[h % ops.size()];
            std::vector<std::size_t> outcomes;  // the faulty ones; success is taken apart
            std::size_t success = enabled.size();
            for (std::size_t i : members) {
                if (enabled[i].target != op) continue;
                if (enabled[i].kind == StepKind::io_complete)
                    success = i;
                else
                    outcomes.push_back(i);
            }
            const std::uint64_t roll = h / ops.size();
            if (outcomes.empty() || (success != enabled.size() && roll % 2 == 0)) return success;
            return outcomes[(roll / 2) % outcomes.size()];
        }
        case Actor::background:
        case Actor::fault:
        case Actor::config: break;
    }
    std::vector<StepKind> kinds;
    for (std::size_t i : members)
        if (std::find(kinds.begin(), kinds.end(), enabled[i].kind) == kinds.end()) kinds.push_back(enabled[i].kind);
    const StepKind kind = kinds[h % kinds.size()];
    std::vector<std::size_t> targets;
    for (std::size_t i : members)
        if (enabled[i].kind == kind) targets.push_back(i);
    return targets[(h / kinds.size()) % targets.size()];
}

struct CaseRun {
    std::vector<model::Step> steps;  // every step taken, through the violating one
    std::vector<std::string> described;
    std::vector<model::Violation> violations;  // of the first step that raised the watched invariant
    bool violated = false;
    std::array<std::size_t, 4> verdicts{};  // lookups by verdict (model::VerdictKind)
    std::size_t resumed_reads = 0;          // reads that resumed from the cache (resume_len > 0)
    std::size_t cut_lookups = 0;            // lookups whose misses' tokens were summed (cut_accounted)
    std::size_t tier_drops = 0;             // entries a full tier dropped for an offload
    std::size_t demotions = 0;              // copies moved from host memory to disk
    std::size_t arrivals = 0;               // entries whose content reached the GPU (StepOutcome::residency)
};

// Which entries hold content on the GPU, kept from the steps' reports alone (evictions and
// StepOutcome::residency in the order they happened), as the simulator's entry ages keep it.
// Returns the arrivals reported.
std::size_t follow_residency(const model::StepOutcome& out, std::vector<bool>& on_gpu) {
    std::size_t next = 0, arrivals = 0;
    const auto at = [&](std::uint32_t id) -> std::vector<bool>::reference {
        if (on_gpu.size() <= id) on_gpu.resize(id + 1, false);
        return on_gpu[id];
    };
    const auto evictions_until = [&](std::size_t end) {
        for (; next < end; ++next)
            if (!out.evicted[next].shed) at(out.evicted[next].segment) = false;
    };
    for (const model::Residency& r : out.residency) {
        evictions_until(r.after_evictions);
        switch (r.kind) {
            case model::Residency::Kind::written:
            case model::Residency::Kind::loaded: at(r.id) = true, ++arrivals; break;
            case model::Residency::Kind::split: at(r.id) = static_cast<bool>(at(r.from)); break;
            case model::Residency::Kind::offloaded: at(r.id) = false; break;
        }
    }
    evictions_until(out.evicted.size());
    return arrivals;
}

// The first entry whose content is on the GPU (a slot, and not still loading) where the mirror
// says otherwise, or the reverse; kNone when they agree.
std::uint32_t residency_mismatch(const model::World& w, std::vector<bool>& on_gpu) {
    on_gpu.resize(std::max(on_gpu.size(), w.segments.size()), false);
    for (std::uint32_t id = 0; id < on_gpu.size(); ++id) {
        const bool holds = id < w.segments.size() && w.segments[id].live && w.segments[id].slot != model::kNone &&
                           w.segments[id].stage != model::Stage::loading;
        if (holds != on_gpu[id]) return id;
    }
    return model::kNone;
}

// Whether a lookup's misses account for every token its groups cut: under group intersection the
// cuts add up to the hash hit on the grain minus the resume length. Not checked for a verdict
// that waits for loads (its misses are those before the loads), after the lookup budget (which
// drops the plan) or without matching (rollout off, the plain hash-hit rule). Counts the
// lookups it checked in `checked`.
bool cut_accounted(const model::World& world, const model::Defenses& defenses, const model::Request& q,
                   const model::LookupResult& res, std::size_t& checked) {
    if (res.verdict == model::VerdictKind::io_wait || !defenses.group_intersection || defenses.hash_hit_is_enough ||
        world.rollout == model::Rollout::off || q.lookups > world.limits.max_lookups)
        return true;
    const std::uint32_t grain = model::resume_grain(world);
    std::uint64_t cut = 0;
    for (const model::Miss& m : res.misses) cut += m.tokens;
    if (cut > 0) ++checked;
    return cut == res.hash_hit_len / grain * grain - res.resume_len;
}

// The step kinds still allowed. Like the explorer's budgets, at most max_faults fault steps and
// max_background evictions/offloads are taken, except that the fault budget is kept per fault
// actor (I/O faults, segment faults, version/config changes): a configuration change early in a
// run then cannot use up the budget of a load failure late in it.
std::uint32_t allowed_kinds(const sim::Scope& scope, const std::array<std::uint8_t, kActorCount>& faults_used,
                            std::uint8_t background_used) {
    std::uint32_t kinds = scope.step_kinds;
    for (int k = 0; k < model::kStepKindCount; ++k) {
        const auto kind = static_cast<StepKind>(k);
        if (model::is_fault(kind) && faults_used[static_cast<std::size_t>(actor_of(kind))] >= scope.max_faults)
            kinds &= ~model::kind_bit(kind);
    }
    if (background_used >= scope.max_background) kinds &= ~sim::background_kinds();
    return kinds;
}

// Runs one case. Stops at the first step whose violations include `watch` (any invariant when empty).
// A request's first lookup is held back until its arrival step, unless nothing else could run.
CaseRun run_case(const sim::Scope& scope, const std::vector<std::uint32_t>& arrivals,
                 const std::array<std::uint32_t, kActorCount>& weights, const model::Defenses& defenses,
                 const std::vector<std::uint8_t>& choices, const std::string& watch) {
    CaseRun run;
    model::World world = sim::initial_world(scope, defenses);
    std::array<std::uint8_t, kActorCount> faults{};
    std::uint8_t background = 0;
    std::vector<model::Step> enabled;
    model::Driver driver;
    std::vector<bool> on_gpu;
    for (std::size_t i = 0; i < choices.size() + kTailSteps; ++i) {
        model::enabled_steps(world, allowed_kinds(scope, faults, background), enabled);
        const auto not_arrived = [&](const model::Step& s) {
            return s.kind == StepKind::lookup && world.requests[s.target].lookups == 0 && i < arrivals[s.target];
        };
        if (!std::all_of(enabled.begin(), enabled.end(), not_arrived))
            enabled.erase(std::remove_if(enabled.begin(), enabled.end(), not_arrived), enabled.end());
        if (enabled.empty()) break;
        const model::Step step = enabled[pick_step(enabled, weights, i < choices.size() ? choices[i] : 0)];
        run.described.push_back(model::describe(world, step));
        run.steps.push_back(step);
        const model::StepOutcome& outcome = driver.apply(world, step);
        if (outcome.lookup) ++run.verdicts[static_cast<std::size_t>(outcome.lookup->verdict)];
        run.tier_drops += static_cast<std::size_t>(
            std::count_if(outcome.evicted.begin(), outcome.evicted.end(),
                          [](const model::Eviction& e) { return e.cause == model::EvictionCause::tier_full; }));
        run.demotions += outcome.demotions;
        run.arrivals += follow_residency(outcome, on_gpu);
        if (const std::uint32_t id = watch.empty() ? residency_mismatch(world, on_gpu) : model::kNone;
            id != model::kNone) {
            run.violations.push_back(
                {"residency", "entry " + std::to_string(id) + (on_gpu[id] ? " left" : " reached") +
                                  " the GPU without a report in StepOutcome::evicted or ::residency"});
            run.violated = true;
            return run;
        }
        if (outcome.lookup && watch.empty() &&
            !cut_accounted(world, defenses, world.requests[step.target], *outcome.lookup, run.cut_lookups)) {
            run.violations.push_back({"miss_tokens", "the misses' tokens do not add up to what the lookup cut"});
            run.violated = true;
            return run;
        }
        // The simulator's offloader skips the lists model::may_offload_from rules out when the
        // host/disk tier has less room than Derived::min_entry_bytes: only parts of shed window
        // extents, which hold nothing, may hold less.
        if (watch.empty() && std::any_of(world.segments.begin(), world.segments.end(), [&](const model::Segment& s) {
                return s.live && world.bytes_of(s) < world.derived.min_entry_bytes &&
                       !(world.bytes_of(s) == 0 && s.shed && !s.is_tail &&
                         world.group(s.group).kind == model::GroupKind::swa);
            })) {
            run.violations.push_back(
                {"min_entry_bytes",
                 "an entry that is no shed window part holds fewer bytes than Derived::min_entry_bytes"});
            run.violated = true;
            return run;
        }
        if (step.kind == StepKind::read && world.requests[step.target].resume_len > 0) ++run.resumed_reads;
        if (model::is_fault(step.kind)) ++faults[static_cast<std::size_t>(actor_of(step.kind))];
        if (sim::is_background(step.kind)) ++background;
        const std::vector<model::Violation>& found = driver.check(world, outcome);
        if (sim::violates(found, watch)) {
            run.violations = found;
            run.violated = true;
            return run;
        }
    }
    return run;
}

std::string format_run(const CaseRun& run) {
    std::ostringstream out;
    for (std::size_t i = 0; i < run.described.size(); ++i) out << "  " << i + 1 << ". " << run.described[i] << "\n";
    for (const model::Violation& v : run.violations) out << "  violated " << v.invariant << ": " << v.message << "\n";
    return out.str();
}

// RapidCheck scales generated ranges with the test's size; the scope and the choice bytes are
// drawn at full size from the first case on, and a sequence holds up to kChoicesMax bytes.
constexpr int kFullSize = 100;
constexpr int kChoicesMax = 128;

rc::Gen<std::vector<std::uint8_t>> gen_choices() {
    const rc::Gen<std::uint8_t> byte =
        rc::gen::resize(kFullSize, rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 256),
                                                [](std::uint32_t b) { return static_cast<std::uint8_t>(b); }));
    return rc::gen::resize(kChoicesMax, rc::gen::container<std::vector<std::uint8_t>>(byte));
}

struct Search {
    bool found = false;
    int cases = 0;     // successful cases before the first counterexample
    CaseRun shrunk;    // the last failing run: after shrinking, the minimal counterexample
    std::string draw;  // the shrunk scope draw
    double seconds = 0;
    std::string error;                                       // set when RapidCheck gave up or failed internally
    std::size_t runs = 0;                                    // cases run, shrinking included
    std::size_t steps = 0;                                   // steps taken over all runs
    std::array<std::size_t, model::kStepKindCount> kinds{};  // steps taken by kind, over all runs
    std::array<std::size_t, 4> verdicts{};                   // lookups by verdict, over all runs
    std::size_t resumed_reads = 0;
    std::size_t cut_lookups = 0;
    std::size_t tier_drops = 0;
    std::size_t demotions = 0;
    std::size_t arrivals = 0;
};

// RapidCheck's default listener registers every failure for a "reproduce with RC_PARAMS" note at
// exit; here failures are expected (mutants) or reported by the test itself with the seed.
class QuietListener : public rc::detail::TestListener {
public:
    void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
    void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
    void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// Checks "no violation of `watch`" for `defenses`, deterministically from `seed`.
Search search(const model::Defenses& defenses, const std::string& watch, bool vary_rollout, std::uint64_t seed,
              int max_success, int max_size, bool extents = false) {
    Search result;
    const auto started = std::chrono::steady_clock::now();
    const auto property = [&] {
        const ScopeDraw draw =
            *rc::gen::resize(kFullSize, extents ? gen_extents(vary_rollout) : gen_scope(vary_rollout));
        const std::vector<std::uint8_t> choices = *gen_choices();
        std::vector<std::uint32_t> arrivals;
        for (const RequestDraw& r : draw.requests) arrivals.push_back(r.arrival_step);
        const CaseRun run = run_case(build_scope(draw), arrivals, draw.actor_weights, defenses, choices, watch);
        ++result.runs;
        result.steps += run.steps.size();
        for (const model::Step& step : run.steps) ++result.kinds[static_cast<std::size_t>(step.kind)];
        for (std::size_t v = 0; v < 4; ++v) result.verdicts[v] += run.verdicts[v];
        result.resumed_reads += run.resumed_reads;
        result.cut_lookups += run.cut_lookups;
        result.tier_drops += run.tier_drops;
        result.demotions += run.demotions;
        result.arrivals += run.arrivals;
        if (run.violated) {
            result.shrunk = run;
            std::ostringstream shown;
            showValue(draw, shown);
            result.draw = shown.str();
        }
        RC_ASSERT(!run.violated);
    };
    rc::detail::TestParams params;
    params.seed = seed;
    params.maxSuccess = max_success;
    params.maxSize = max_size;
    rc::detail::TestMetadata metadata;
    metadata.id = watch;
    metadata.description = watch;
    QuietListener listener;
    const rc::detail::TestResult outcome =
        rc::detail::checkProperty(rc::detail::toProperty(property), metadata, params, listener);
    rc::detail::FailureResult failure;
    rc::detail::SuccessResult success;
    rc::detail::GaveUpResult gave_up;
    rc::detail::Error error;
    if (outcome.match(failure)) {
        result.found = true;
        result.cases = failure.numSuccess;
    } else if (outcome.match(success)) {
        result.cases = success.numSuccess;
    } else if (outcome.match(gave_up)) {
        result.error = "gave up: " + gave_up.description;
    } else if (outcome.match(error)) {
        result.error = "error: " + error.description;
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

}  // namespace
