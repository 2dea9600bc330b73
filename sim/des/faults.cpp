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
        for (const auto& entry : rate_entries_[k]) rate_mixed_[k] = rate_mixed_[k] || entry.second != rate_entries_[k].front().second;
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
            const std::string when = t.spec.at_event ? "at_event " + std::to_string(*t.spec.at_event) : "at_ms " + std::string(ms);
            out.emplace_back(t.entry, name(t.entry, t.spec.fault, when));
        }
    for (const Aimed& a : aimed_) {
        if (a.acted) continue;
        const model::FaultClass fault = a.slot == kTimeoutSlot ? model::FaultClass::F2 : static_cast<model::FaultClass>(a.slot);
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
                          slot == static_cast<std::size_t>(model::FaultClass::F4) || slot == static_cast<std::size_t>(model::FaultClass::F9);
    if (transfer) mark_held();
    return action;
}

void FaultInjector::mark_held() {
    if (held_) (held_->aimed ? aimed_[held_->index].acted : scheduled_[held_->index].acted) = true;
    held_.reset();
}

FaultInjector::Inject FaultInjector::acting(const Inject& inject) {
    return [this, &inject](const Step& step, model::FaultClass fault) {
        if (!inject(step, fault)) return false;
        mark_held();
        return true;
    };
}

// The least (or with `hottest`, the most) recently used segment of `form` the fault can still
// act on, the first group's eviction list first; one already damaged is skipped.
void FaultInjector::first_enabled(StepKind kind, Form form, model::FaultClass fault, FaultTarget target, const Inject& inject) const {
    const bool hottest = target == FaultTarget::hottest;
    for (std::size_t list = 0; list < world_.lru_head.size(); ++list)
        for (std::uint32_t id = hottest ? world_.lru_tail[list] : world_.lru_head[list]; id != kNone;
             id = hottest ? world_.segments[id].lru_prev : world_.segments[id].lru_next)
            if (world_.segments[id].form == form && inject({kind, id, 0}, fault)) return;
}

void FaultInjector::global(model::FaultClass fault, FaultAction action, FaultTarget target, std::uint32_t timed, const Inject& inject) {
    switch (fault) {
        case model::FaultClass::F1: first_enabled(StepKind::interrupt_eviction, Form::compressed_kv, fault, target, inject); break;
        case model::FaultClass::F3: first_enabled(StepKind::skew_index, Form::indexer_state, fault, target, inject); break;
        case model::FaultClass::F5: {
            // Unless the entry names one: alternately a weights change and a layout change of the first group.
            const bool weights = action == FaultAction::weights || (action == FaultAction::usual && version_changes_++ % 2 == 0);
            if (weights) inject({StepKind::bump_model_version, 0, 0}, fault);
            else inject({StepKind::change_layout, model::primary_group(world_), 0}, fault);
            break;
        }
        case model::FaultClass::F10: under_graph(kNone, action, inject); break;
        case model::FaultClass::F11: first_enabled(StepKind::lose_block, Form::compressed_kv, fault, target, inject); break;
        default: armed_[slot_of(fault, action)].emplace_back(action, timed); break;  // waits for its next opportunity
    }
}

void FaultInjector::fire_scheduled(std::uint32_t index, const Inject& inject) {
    Timed& t = scheduled_[index];
    if (t.left == 0) return;
    --t.left;
    // A segment an earlier scheduled firing damaged, unchanged since (a reused id never repeats
    // an epoch), is no target: F3 and F10 steps stay enabled on what they already hit.
    const auto key = [&](std::uint32_t id) { return (std::uint64_t{id} << 32) | world_.segments[id].epoch; };
    const Inject fresh = [&](const Step& step, model::FaultClass fault) {
        const bool on_segment = model::target_of(step.kind) == model::StepTarget::segment && step.target < world_.segments.size();
        if (on_segment && damaged_.contains(key(step.target))) return false;
        if (!inject(step, fault)) return false;
        if (on_segment) damaged_.insert(key(step.target));
        t.acted = true;
        return true;
    };
    global(t.spec.fault, t.spec.action, t.spec.target, index, fresh);
}

void FaultInjector::aim(model::FaultClass fault, FaultAction action, const std::vector<model::PlanEntry>& plan, const Inject& inject) {
    // The first planned segment the fault can act on now (pinned ones are out of its reach).
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
                if (e.form == Form::swa_window && (!last || (alone && extent))) step = Step{StepKind::evict, e.segment, 0};
                break;
            }
            case model::FaultClass::F6: step = Step{step_of(action, StepKind::evict), e.segment, 0}; break;
            case model::FaultClass::F7:
                if (e.form == Form::uncompressed_tail) step = Step{StepKind::evict, e.segment, 0};
                break;
            default: return;
        }
        if (step && inject(*step, fault)) return;
    }
}

void FaultInjector::before_lookup(std::uint32_t request, const Inject& inject) {
    for (model::FaultClass f : {model::FaultClass::F1, model::FaultClass::F3, model::FaultClass::F8, model::FaultClass::F11}) {
        const std::optional<FaultAction> action = roll(f, request);
        if (!action) continue;
        const model::LookupResult preview = model::lookup(world_, world_.requests[request], scratch_);
        aim(f, *action, preview.plan, acting(inject));
    }
    if (const std::optional<FaultAction> action = roll(model::FaultClass::F5, request))
        global(model::FaultClass::F5, *action, FaultTarget::coldest, kNone, acting(inject));
}

void FaultInjector::after_lookup(std::uint32_t request, const Inject& inject) {
    for (model::FaultClass f : {model::FaultClass::F6, model::FaultClass::F7})
        if (const std::optional<FaultAction> action = roll(f, request)) aim(f, *action, world_.requests[request].plan, acting(inject));
}

void FaultInjector::after_decode(std::uint32_t request, const Inject& inject) {
    if (const std::optional<FaultAction> action = roll(model::FaultClass::F10, request)) under_graph(request, *action, acting(inject));
}

// F10: the first segment a live captured graph references that the action can act on, `request`'s
// graph first, then the others in request order; else the least recently used segment of the
// first eviction list whose head it can act on. A pinned segment is out of reach (only a
// decode's slide lets go of captured blocks while the graph lives), and so is every captured one
// while the graph guard stands.
void FaultInjector::under_graph(std::uint32_t request, FaultAction action, const Inject& inject) {
    const StepKind kind = step_of(action, StepKind::migrate);
    const auto hits_graph = [&](std::uint32_t r) {
        if (r >= world_.graphs.size() || !world_.graphs[r].live) return false;
        for (const model::GraphRef& ref : world_.graphs[r].refs)
            if (inject({kind, ref.segment, 0}, model::FaultClass::F10)) return true;
        return false;
    };
    if (hits_graph(request)) return;
    for (std::uint32_t r = 0; r < world_.graphs.size(); ++r)
        if (r != request && hits_graph(r)) return;
    for (std::uint32_t head : world_.lru_head)
        if (head != kNone && inject({kind, head, 0}, model::FaultClass::F10)) return;
}

StepKind FaultInjector::io_outcome(const model::IoOp& op) {
    // A load belongs to the request waiting for it; an offload to none.
    const std::uint32_t request = op.kind == model::IoKind::load ? op.request : kNone;
    // A partial firing on an offload is an error: the GPU copy stays, as after any failed offload.
    if (const std::optional<FaultAction> action = roll(model::FaultClass::F2, request))
        return *action == FaultAction::partial && op.kind == model::IoKind::load ? StepKind::partial_load : StepKind::io_fail;
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
