// Fault injection F1-F11 for the simulator. Each fault is either scheduled (at a virtual time or
// an event count) or a rate per opportunity; rate faults aim at what a request is about to
// resume from, so that an injected fault is one that matters. docs/faults.md lists every
// opportunity and target.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "model/core.hpp"
#include "model/scratch.hpp"
#include "model/steps.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvcheck::sim {

// What one fault firing would do: the steps it may take, best first. The simulator applies the
// first the model enables and reports it with FaultInjector::acted; when none is enabled the
// firing finds nothing to act on (and is listed by unfired() if it was scheduled or aimed).
struct Proposal {
    model::FaultClass fault = model::FaultClass::F1;
    std::vector<model::Step> steps;
    std::uint32_t scheduled = model::kNone;  // the scheduled entry firing (index), kNone for a roll
};

class FaultInjector {
public:
    // Where faults get their chance: the classes that draw there, in a fixed order (so that the
    // random stream is the same whatever the world does), each proposing against the world as
    // the previous one left it.
    enum class Moment : std::uint8_t { before_lookup, after_lookup, after_decode, scheduled };
    struct Opportunity {
        Moment moment;
        std::uint32_t subject;   // the request slot (kNone: none), or the scheduled entry's index
        std::uint32_t next = 0;  // the next class of the moment to roll
    };
    static Opportunity before_lookup(std::uint32_t request) {
        return {Moment::before_lookup, request};
    }  // F1, F3, F8, F11, F5
    static Opportunity after_lookup(std::uint32_t request) { return {Moment::after_lookup, request}; }  // F6, F7
    static Opportunity after_decode(std::uint32_t request) { return {Moment::after_decode, request}; }  // F10
    static Opportunity scheduled(std::uint32_t index) { return {Moment::scheduled, index}; }

    FaultInjector(const Scenario& scenario, Rng rng, const model::World& world);

    // Hands every time-scheduled fault to `at(time, index)`; event-scheduled ones come from due_by_event.
    void schedule_timed(const std::function<void(std::uint64_t, std::uint32_t)>& at);
    std::vector<std::uint32_t> due_by_event(std::uint64_t events) const;

    // The next firing at `at` with something to propose, into `out`; false once the opportunity
    // is spent. Call acted() for the step applied before asking again.
    bool propose(Opportunity& at, Proposal& out);
    // The simulator applied `step`, one of `proposal`'s: its entry has acted, and a scheduled
    // firing's target is damaged (no later scheduled firing picks it while it is unchanged).
    void acted(const Proposal& proposal, const model::Step& step);

    model::StepKind io_outcome(const model::IoOp& op);  // F2 (error or partial), F9
    std::uint64_t late_io_ns(const model::IoOp& op);    // F4
    // F2 timeout, at a transfer's start: how long until the hung transfer fails (0: it does not hang).
    std::uint64_t timeout_io_ns(const model::IoOp& op) { return timeouts_ ? roll_timeout(op) : 0; }
    // The scheduled and aimed entries that never acted, as "/faults/N (F6 at_request 40)": never
    // due, armed and never given an opportunity, or finding nothing to act on.
    std::vector<std::string> unfired() const;

private:
    model::Scratch scratch_;          // the previews' lookups
    std::vector<std::uint32_t> ids_;  // the model's candidate answers
    // Each fault class draws at its own opportunities, and F2's timeouts at transfer starts, not
    // completions: they count apart, in a slot after the classes'.
    static constexpr std::size_t kTimeoutSlot = model::kFaultClassCount;
    static constexpr std::size_t kSlotCount = model::kFaultClassCount + 1;
    static std::size_t slot_of(model::FaultClass fault, FaultAction action) {
        return fault == model::FaultClass::F2 && action == FaultAction::timeout ? kTimeoutSlot
                                                                                : static_cast<std::size_t>(fault);
    }
    std::optional<FaultAction> roll(model::FaultClass fault, std::uint32_t request) {
        return roll(static_cast<std::size_t>(fault), request);
    }
    // Whether the slot fires at this opportunity, and how: a firing aimed at its request, an
    // armed one, or the rate (the only one that draws, so aimed and armed firings leave the
    // random stream alone). Inline for the usual case, a rate alone: it runs at every transfer.
    std::optional<FaultAction> roll(std::size_t slot, std::uint32_t request) {
        if (!aimed_.empty() || !armed_[slot].empty()) return roll_held(slot, request);
        held_.reset();
        return roll_rate(slot);
    }
    std::optional<FaultAction> roll_rate(std::size_t slot) {
        if (rate_ppm_[slot] == 0 || !rng_.chance_ppm(rate_ppm_[slot])) return std::nullopt;
        return rate_mixed_[slot] ? rate_action(slot) : rate_entries_[slot].front().second;
    }
    std::optional<FaultAction> roll_held(std::size_t slot, std::uint32_t request);
    // The entry whose aimed or armed firing the last roll returned has acted.
    void mark_held();
    std::uint64_t roll_timeout(const model::IoOp& op);
    std::optional<FaultAction> aimed_at(std::size_t slot, std::uint32_t request);
    FaultAction rate_action(std::size_t slot);
    // Each of these appends the firing's candidate steps to out.steps.
    void aim(model::FaultClass fault, FaultAction action, const std::vector<model::PlanEntry>& plan,
             Proposal& out) const;
    // A firing of no request (a scheduled one, or F5's rate): `timed` is the scheduled entry
    // (kNone for a rate firing), which a firing that waits for its next opportunity arms.
    void global(model::FaultClass fault, FaultAction action, FaultTarget target, std::uint32_t timed, Proposal& out);
    void under_graph(std::uint32_t request, FaultAction action, Proposal& out);
    void by_recency(model::StepKind kind, model::Form form, FaultTarget target, Proposal& out);
    bool damaged(const model::Step& step) const;

    const model::World& world_;
    Rng rng_;
    std::array<std::uint32_t, kSlotCount> rate_ppm_{};
    // The rate entries of each slot with their actions, to pick one when they differ.
    std::array<std::vector<std::pair<std::uint32_t, FaultAction>>, kSlotCount> rate_entries_{};
    std::array<bool, kSlotCount> rate_mixed_{};  // the slot's rate entries name different actions
    // One-shot firings waiting for their opportunity: the action and the scheduled entry (its
    // index in scheduled_) that armed it.
    std::array<std::vector<std::pair<FaultAction, std::uint32_t>>, kSlotCount> armed_{};
    std::uint64_t late_ns_ = 50'000'000;
    std::uint64_t timeout_ns_ = 1'000'000'000;
    bool timeouts_ = false;  // an F2 entry of mode timeout: runs without one never roll for it
    std::uint32_t version_changes_ = 0;
    struct Timed {
        FaultSpec spec;
        std::uint32_t left;
        std::uint32_t entry;  // its index in the scenario's faults
        bool acted = false;   // a firing applied its step
    };
    std::vector<Timed> scheduled_;
    std::unordered_set<std::uint64_t> damaged_;  // (segment id, epoch) each scheduled firing left behind
    struct Aimed {
        std::uint32_t uid;  // the request, in arrival order
        std::size_t slot;
        FaultAction action;
        std::uint32_t left;
        std::uint32_t entry;
        bool acted = false;  // a firing applied its step
    };
    std::vector<Aimed> aimed_;  // firings that wait for one request's opportunities
    // The aimed (index in aimed_) or armed (index in scheduled_) firing the last roll returned,
    // until a step of it applies.
    struct Held {
        bool aimed;
        std::uint32_t index;
    };
    std::optional<Held> held_;
};

}  // namespace kvcheck::sim
