// Fault targets: rate faults on the segments a request is about to read; scheduled faults either
// act at once on the coldest (or hottest) candidate or arm the next opportunity of their class.
#include "sim/des/faults.hpp"

#include <algorithm>
#include <cstdio>

#include "model/match.hpp"

namespace kvcheck::sim {

using model::Form;
using model::kNone;
using model::Step;
using model::StepKind;

namespace {

// The step an F6 or F10 action takes; `usual` for an entry without an action (F6 evicts, F10
// migrates).
StepKind step_of(FaultAction action, StepKind usual) {
    switch (action) {
        case FaultAction::evict: return StepKind::evict;
        case FaultAction::offload: return StepKind::offload;
        case FaultAction::migrate: return StepKind::migrate;
        default: return usual;
    }
}

}  // namespace

FaultInjector::FaultInjector(const Scenario& scenario, Rng rng, const model::World& world) : world_(world), rng_(rng) {
    for (std::uint32_t entry = 0; entry < scenario.faults.size(); ++entry) {
        const FaultSpec& f = scenario.faults[entry];
        const std::size_t slot = slot_of(f.fault, f.action);
        rate_ppm_[slot] = std::min<std::uint32_t>(1'000'000, rate_ppm_[slot] + f.rate_ppm);
        if (f.rate_ppm > 0) rate_entries_[slot].emplace_back(f.rate_ppm, f.action);
        if (f.extra_latency_us) late_ns_ = *f.extra_latency_us * 1000;
        if (slot == kTimeoutSlot) timeouts_ = true;
        if (f.timeout_us) timeout_ns_ = *f.timeout_us * 1000;
        if (f.at_ns || f.at_event) scheduled_.push_back({f, f.count, entry, false});
        if (f.at_request) aimed_.push_back({*f.at_request, slot, f.action, f.count, entry});
    }
    for (std::size_t k = 0; k < rate_entries_.size(); ++k)
        for (const auto& entry : rate_entries_[k])
            rate_mixed_[k] = rate_mixed_[k] || entry.second != rate_entries_[k].front().second;
}

void FaultInjector::schedule_timed(const std::function<void(std::uint64_t, std::uint32_t)>& at) {
    // A fault with count n fires n times at its time (each firing picks its own target).
    for (std::uint32_t i = 0; i < scheduled_.size(); ++i)
        if (scheduled_[i].spec.at_ns)
            for (std::uint32_t k = 0; k < scheduled_[i].spec.count; ++k) at(*scheduled_[i].spec.at_ns, i);
}

std::vector<std::string> FaultInjector::unfired() const {
    std::vector<std::pair<std::uint32_t, std::string>> out;
    const auto name = [](std::uint32_t entry, model::FaultClass fault, const std::string& when) {
        return "/faults/" + std::to_string(entry) + " (" + std::string(model::fault_name(fault)) + " " + when + ")";
    };
    for (const Timed& t : scheduled_)
        if (!t.acted) {
            char ms[32];
            std::snprintf(ms, sizeof ms, "%.9g", t.spec.at_ns ? static_cast<double>(*t.spec.at_ns) / 1e6 : 0.0);
            const std::string when =
                t.spec.at_event ? "at_event " + std::to_string(*t.spec.at_event) : "at_ms " + std::string(ms);
            out.emplace_back(t.entry, name(t.entry, t.spec.fault, when));
        }
    for (const Aimed& a : aimed_) {
        if (a.acted) continue;
        const model::FaultClass fault =
            a.slot == kTimeoutSlot ? model::FaultClass::F2 : static_cast<model::FaultClass>(a.slot);
        out.emplace_back(a.entry, name(a.entry, fault, "at_request " + std::to_string(a.uid)));
    }
    std::sort(out.begin(), out.end());
    std::vector<std::string> names;
    for (auto& [entry, text] : out) names.push_back(std::move(text));
    return names;
}

std::vector<std::uint32_t> FaultInjector::due_by_event(std::uint64_t events) const {
    std::vector<std::uint32_t> due;
    for (std::uint32_t i = 0; i < scheduled_.size(); ++i)
        if (scheduled_[i].spec.at_event && *scheduled_[i].spec.at_event == events)
            for (std::uint32_t k = 0; k < scheduled_[i].spec.count; ++k) due.push_back(i);
    return due;
}

// A firing aimed at the request in slot `request` (kNone: an opportunity of no request).
std::optional<FaultAction> FaultInjector::aimed_at(std::size_t slot, std::uint32_t request) {
    if (request == kNone) return std::nullopt;
    const std::uint32_t uid = world_.requests[request].spec->uid;
    for (std::uint32_t i = 0; i < aimed_.size(); ++i) {
        Aimed& a = aimed_[i];
        if (a.slot == slot && a.uid == uid && a.left > 0) {
            --a.left;
            held_ = Held{true, i};
            return a.action;
        }
    }
    return std::nullopt;
}

// The action of a rate firing when the class's rate entries name different ones: one drawn in
// proportion to their rates (the only case that draws for it).
FaultAction FaultInjector::rate_action(std::size_t slot) {
    const auto& entries = rate_entries_[slot];
    std::uint64_t total = 0;
    for (const auto& e : entries) total += e.first;
    std::uint64_t pick = rng_.below(total);
    for (const auto& e : entries) {
        if (pick < e.first) return e.second;
        pick -= e.first;
    }
    return entries.back().second;
}

// roll() when firings are aimed or armed: those first, else the rate.
std::optional<FaultAction> FaultInjector::roll_held(std::size_t slot, std::uint32_t request) {
    held_.reset();
    std::optional<FaultAction> action = aimed_at(slot, request);
    if (!action && !armed_[slot].empty()) {
        const auto [armed, timed] = armed_[slot].front();
        armed_[slot].erase(armed_[slot].begin());
        held_ = Held{false, timed};
        action = armed;
    }
    if (!action) return roll_rate(slot);
    // A transfer's outcome (F2, F4, F9) always takes effect; the other classes act through a step.
    const bool transfer = slot == kTimeoutSlot || slot == static_cast<std::size_t>(model::FaultClass::F2) ||
                          slot == static_cast<std::size_t>(model::FaultClass::F4) ||
                          slot == static_cast<std::size_t>(model::FaultClass::F9);
    if (transfer) mark_held();
    return action;
}

void FaultInjector::mark_held() {
    if (held_) (held_->aimed ? aimed_[held_->index].acted : scheduled_[held_->index].acted) = true;
    held_.reset();
}

// A segment an earlier scheduled firing damaged, unchanged since (a reused id never repeats an
// epoch), is no target for a scheduled firing: F3 and F10 steps stay enabled on what they hit.
namespace {
bool on_segment(const model::World& world, const Step& step) {
    return model::target_of(step.kind) == model::StepTarget::segment && step.target < world.segments.size();
}
std::uint64_t damage_key(const model::World& world, std::uint32_t id) {
    return (std::uint64_t{id} << 32) | world.segments[id].epoch;
}
}  // namespace

bool FaultInjector::damaged(const Step& step) const {
    return on_segment(world_, step) && damaged_.contains(damage_key(world_, step.target));
}

void FaultInjector::acted(const Proposal& proposal, const Step& step) {
    if (proposal.scheduled == kNone) {
        mark_held();
        return;
    }
    if (on_segment(world_, step)) damaged_.insert(damage_key(world_, step.target));
    scheduled_[proposal.scheduled].acted = true;
}

// The least (or with `hottest`, the most) recently used segments of `form`, the first group's
// eviction list first.
void FaultInjector::by_recency(StepKind kind, Form form, FaultTarget target, Proposal& out) {
    model::segments_by_recency(world_, form, target == FaultTarget::hottest, ids_);
    for (std::uint32_t id : ids_) out.steps.push_back({kind, id, 0});
}

void FaultInjector::global(model::FaultClass fault, FaultAction action, FaultTarget target, std::uint32_t timed,
                           Proposal& out) {
    switch (fault) {
        case model::FaultClass::F1: by_recency(StepKind::interrupt_eviction, Form::compressed_kv, target, out); break;
        case model::FaultClass::F3: by_recency(StepKind::skew_index, Form::indexer_state, target, out); break;
        case model::FaultClass::F5: {
            // Unless the entry names one: alternately a weights change and a layout change of the first group.
            const bool weights =
                action == FaultAction::weights || (action == FaultAction::usual && version_changes_++ % 2 == 0);
            if (weights)
                out.steps.push_back({StepKind::bump_model_version, 0, 0});
            else
                out.steps.push_back({StepKind::change_layout, model::primary_group(world_), 0});
            break;
        }
        case model::FaultClass::F10: under_graph(kNone, action, out); break;
        case model::FaultClass::F11: by_recency(StepKind::lose_block, Form::compressed_kv, target, out); break;
        default: armed_[slot_of(fault, action)].emplace_back(action, timed); break;  // waits for its next opportunity
    }
}

void FaultInjector::aim(model::FaultClass fault, FaultAction action, const std::vector<model::PlanEntry>& plan,
                        Proposal& out) const {
    // The planned segments the fault can act on now, in plan order (pinned ones are out of its
    // reach: the model does not enable a step on them).
    for (std::size_t i = 0; i < plan.size(); ++i) {
        const model::PlanEntry& e = plan[i];
        if (e.segment == kNone || !world_.segments[e.segment].live) continue;
        std::optional<Step> step;
        switch (fault) {
            case model::FaultClass::F1:
                if (e.form == Form::compressed_kv) step = Step{StepKind::interrupt_eviction, e.segment, 0};
                break;
            case model::FaultClass::F11:
                if (e.form == Form::compressed_kv) step = Step{StepKind::lose_block, e.segment, 0};
                break;
            case model::FaultClass::F3:
                if (e.form == Form::indexer_state) step = Step{StepKind::skew_index, e.segment, 0};
                break;
            case model::FaultClass::F8: {
                // A window block other than the window's last one expires early; a window read
                // from one extent expires with it (its blocks go together).
                const bool last = i + 1 >= plan.size() || plan[i + 1].group != e.group;
                const bool alone = last && (i == 0 || plan[i - 1].group != e.group);
                const bool extent = world_.segments[e.segment].units() > 1;
                if (e.form == Form::swa_window && (!last || (alone && extent)))
                    step = Step{StepKind::evict, e.segment, 0};
                break;
            }
            case model::FaultClass::F6: step = Step{step_of(action, StepKind::evict), e.segment, 0}; break;
            case model::FaultClass::F7:
                if (e.form == Form::uncompressed_tail) step = Step{StepKind::evict, e.segment, 0};
                break;
            default: return;
        }
        if (step) out.steps.push_back(*step);
    }
}

bool FaultInjector::propose(Opportunity& at, Proposal& out) {
    using model::FaultClass;
    static constexpr std::array<FaultClass, 5> kBeforeLookup{FaultClass::F1, FaultClass::F3, FaultClass::F8,
                                                             FaultClass::F11, FaultClass::F5};
    static constexpr std::array<FaultClass, 2> kAfterLookup{FaultClass::F6, FaultClass::F7};
    for (;;) {
        out.steps.clear();
        out.scheduled = kNone;
        const std::uint32_t k = at.next++;
        const std::uint32_t r = at.subject;
        switch (at.moment) {
            case Moment::before_lookup: {
                if (k >= kBeforeLookup.size()) return false;
                out.fault = kBeforeLookup[k];
                const std::optional<FaultAction> action = roll(out.fault, r);
                if (!action) continue;
                if (out.fault == FaultClass::F5) {
                    global(out.fault, *action, FaultTarget::coldest, kNone, out);
                } else {
                    // Aimed at what the request is about to resume from, as a lookup now finds it.
                    const model::LookupResult preview = model::lookup(world_, world_.requests[r], scratch_);
                    aim(out.fault, *action, preview.plan, out);
                }
                break;
            }
            case Moment::after_lookup: {
                if (k >= kAfterLookup.size()) return false;
                out.fault = kAfterLookup[k];
                if (const std::optional<FaultAction> action = roll(out.fault, r))
                    aim(out.fault, *action, world_.requests[r].plan, out);
                break;
            }
            case Moment::after_decode:
                if (k > 0) return false;
                out.fault = FaultClass::F10;
                if (const std::optional<FaultAction> action = roll(out.fault, r)) under_graph(r, *action, out);
                break;
            case Moment::scheduled: {
                Timed& t = scheduled_[r];
                if (k > 0 || t.left == 0) return false;
                --t.left;
                out.fault = t.spec.fault;
                out.scheduled = r;
                global(t.spec.fault, t.spec.action, t.spec.target, r, out);
                std::erase_if(out.steps, [&](const Step& step) { return damaged(step); });
                break;
            }
        }
        if (!out.steps.empty()) return true;
    }
}

// F10: the segments live captured graphs reference, `request`'s graph first, then the others in
// request order; then the least recently used segment of each eviction list. A pinned segment
// is out of reach (only a decode's slide lets go of captured blocks while the graph lives), and
// so is every captured one while the graph guard stands: the model enables no step on them.
void FaultInjector::under_graph(std::uint32_t request, FaultAction action, Proposal& out) {
    const StepKind kind = step_of(action, StepKind::migrate);
    model::captured_segments(world_, request, ids_);
    for (std::uint32_t id : ids_) out.steps.push_back({kind, id, 0});
    model::eviction_heads(world_, ids_);
    for (std::uint32_t id : ids_) out.steps.push_back({kind, id, 0});
}

StepKind FaultInjector::io_outcome(const model::IoOp& op) {
    // A load belongs to the request waiting for it; an offload to none.
    const std::uint32_t request = op.kind == model::IoKind::load ? op.request : kNone;
    // A partial firing on an offload is an error: the GPU copy stays, as after any failed offload.
    if (const std::optional<FaultAction> action = roll(model::FaultClass::F2, request))
        return *action == FaultAction::partial && op.kind == model::IoKind::load ? StepKind::partial_load
                                                                                 : StepKind::io_fail;
    if (op.kind == model::IoKind::load && roll(model::FaultClass::F9, request)) return StepKind::misaligned_reload;
    return StepKind::io_complete;
}

std::uint64_t FaultInjector::late_io_ns(const model::IoOp& op) {
    return roll(model::FaultClass::F4, op.kind == model::IoKind::load ? op.request : kNone) ? late_ns_ : 0;
}

std::uint64_t FaultInjector::roll_timeout(const model::IoOp& op) {
    return roll(kTimeoutSlot, op.kind == model::IoKind::load ? op.request : kNone) ? timeout_ns_ : 0;
}

}  // namespace kvcheck::sim
