// Step names and one-line descriptions of steps, for counterexamples, schedules and timelines
// (declared in model/steps.hpp).
#include <array>
#include <string>

#include "model/steps.hpp"

namespace kvcheck::model {

namespace {

constexpr std::array<std::string_view, kStepKindCount> kStepNames = {"lookup",
                                                                     "pin",
                                                                     "revalidate",
                                                                     "allocate",
                                                                     "read",
                                                                     "commit",
                                                                     "decode",
                                                                     "finish",
                                                                     "evict",
                                                                     "offload",
                                                                     "io_complete",
                                                                     "io_fail",
                                                                     "interrupt_eviction",
                                                                     "skew_index",
                                                                     "bump_model_version",
                                                                     "change_layout",
                                                                     "misaligned_reload",
                                                                     "migrate",
                                                                     "lose_block",
                                                                     "partial_load",
                                                                     "stop_waiting",
                                                                     "abort"};

}  // namespace

std::string_view step_kind_name(StepKind kind) { return kStepNames[static_cast<std::size_t>(kind)]; }

std::optional<StepKind> step_kind_from_name(std::string_view name) {
    for (std::size_t i = 0; i < kStepNames.size(); ++i)
        if (kStepNames[i] == name) return static_cast<StepKind>(i);
    return std::nullopt;
}

std::string request_name(const World& w, std::uint32_t r) {
    const std::string slot = std::to_string(r);
    if (r >= w.requests.size() || w.requests[r].spec == nullptr) return "request slot " + slot;
    const std::uint32_t uid = w.requests[r].spec->uid;
    return uid == r ? "request " + slot : "request " + std::to_string(uid) + " (slot " + slot + ")";
}

std::string describe(const World& w, const Step& step) {
    std::string out(step_kind_name(step.kind));
    auto segment_text = [&](std::uint32_t id) {
        std::string text(" ");
        if (id >= w.segments.size()) return text.append("segment ?");
        const Segment& s = w.segments[id];
        text.append(form_name(s.form)).append(" segment ").append(std::to_string(id));
        text.append(" [").append(std::to_string(w.start_of(s))).append(",").append(std::to_string(s.end));
        return text.append(") of group ").append(w.group(s.group).name);
    };
    switch (target_of(step.kind)) {
        case StepTarget::request:
            out.append(" ").append(request_name(w, step.target));
            if (step.kind == StepKind::decode && step.arg != 0) out += " by " + std::to_string(step.arg) + " tokens";
            return out;
        case StepTarget::segment: return out + segment_text(step.target);
        case StepTarget::io: {
            if (step.target >= w.io.size()) return out + " io ?";
            const IoOp& op = w.io[step.target];
            return out + " " + (op.kind == IoKind::load ? "load" : "offload") + " of" + segment_text(op.segment);
        }
        case StepTarget::global:
            if (step.kind == StepKind::bump_model_version) return out;
            return out + " of group " +
                   (step.target < w.config->groups.size() ? w.group(static_cast<std::uint8_t>(step.target)).name : "?");
    }
    return out;
}

}  // namespace kvcheck::model
