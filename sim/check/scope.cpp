// Named scopes and the initial world they describe.
#include "sim/check/scope.hpp"

#include "model/invariants.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <stdexcept>

namespace kvcheck::sim {

using model::kind_bit;
using model::StepKind;

std::uint32_t actor_kinds() {
    std::uint32_t bits = 0;
    for (StepKind k : {StepKind::lookup, StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read,
                       StepKind::commit, StepKind::decode, StepKind::finish, StepKind::io_complete})
        bits |= kind_bit(k);
    return bits;
}

bool is_background(StepKind kind) { return kind == StepKind::evict || kind == StepKind::offload; }

std::uint32_t background_kinds() { return kind_bit(StepKind::evict) | kind_bit(StepKind::offload); }

std::uint32_t allowed_kinds(const Scope& scope, std::uint8_t faults_used, std::uint8_t background_used) {
    std::uint32_t kinds = scope.step_kinds;
    if (faults_used >= scope.max_faults) kinds &= ~all_fault_kinds();
    if (background_used >= scope.max_background) kinds &= ~background_kinds();
    return kinds;
}

std::uint32_t all_fault_kinds() {
    static const std::uint32_t bits = [] {  // asked for every state an explorer expands
        std::uint32_t b = 0;
        for (int k = 0; k < model::kStepKindCount; ++k)
            if (model::is_fault(static_cast<StepKind>(k))) b |= kind_bit(static_cast<StepKind>(k));
        return b;
    }();
    return bits;
}

Scope named_scope(const std::string& name) {
    Scope s;
    s.name = name;
    s.model = *model::find_preset("toy");
    s.content_block_tokens = 16;
    s.step_kinds = actor_kinds() | background_kinds() | all_fault_kinds();
    if (name == "reference") {
        // Request 1 extends request 0's prompt, so it can resume from request 0's cache; the
        // budget holds one request's blocks but not both, so admission has to evict.
        s.requests = {{{1, 2, 3, 4, 5, 6}, 96, 16}, {{1, 2, 3, 4, 5, 6, 7}, 112, 0}};
        s.limits.gpu_budget_bytes = 40'000;
        s.max_faults = 1;
        s.max_background = 2;
        s.max_depth = 60;
        return s;
    }
    if (name == "extents") {
        // The reference scope with state-table entries of up to 64 tokens (docs/invariants.md,
        // "Extents"): four blocks of c1, SWA and the indexer, one compressed segment of c4.
        s = named_scope("reference");
        s.name = name;
        s.limits.extent_tokens = 64;
        return s;
    }
    if (name == "small") {
        s.requests = {{{1, 2, 3, 4}, 64, 16}, {{1, 2, 3, 4, 5}, 80, 0}};
        s.limits.gpu_budget_bytes = 30'000;
        s.max_faults = 1;
        s.max_background = 1;
        s.max_depth = 50;
        return s;
    }
    if (name == "pin-epoch") {
        // Request 0 has cached the 32-token prefix; requests 1-3 read it while the evictor may
        // evict twice. Only the c1 group of the toy preset: KV blocks, no other form.
        s.model.groups.resize(1);
        s.requests = {{{1, 2}, 32, 0, true}, {{1, 2}, 32, 0}, {{1, 2}, 32, 0}, {{1, 2}, 32, 0}, {{1, 2}, 32, 0}};
        s.limits.gpu_budget_bytes = 40'000;
        s.step_kinds = actor_kinds() | model::kind_bit(StepKind::evict);
        s.max_faults = 0;
        s.max_background = 2;
        s.max_depth = 60;
        return s;
    }
    throw std::invalid_argument("unknown scope '" + name + "' (known: reference, small, pin-epoch, extents)");
}

std::vector<std::string> scope_names() { return {"reference", "small", "pin-epoch", "extents"}; }

model::World initial_world(const Scope& scope, const model::Defenses& defenses) {
    model::World w(std::make_shared<model::ModelConfig>(scope.model), defenses, scope.limits, scope.rollout);
    std::uint32_t uid = 0;
    for (const RequestTemplate& t : scope.requests)
        w.add_request(std::make_shared<model::RequestSpec>(
            model::make_request_spec(uid++, t.ids, scope.content_block_tokens, t.input_tokens, t.output_tokens)));
    std::vector<model::Step> steps;
    std::vector<model::Violation> violations;
    for (std::uint32_t r = 0; r < scope.requests.size(); ++r) {
        if (!scope.requests[r].warm) continue;
        while (w.requests[r].phase != model::Phase::done) {
            model::enabled_steps(w, actor_kinds(), steps);
            const auto own = std::find_if(steps.begin(), steps.end(), [&](const model::Step& s) {
                return s.kind == StepKind::io_complete || s.target == r;
            });
            if (own == steps.end())
                throw std::invalid_argument("warm request " + std::to_string(r) + " cannot run to the end on its own");
            const model::StepOutcome outcome = model::apply(w, *own);
            violations.clear();
            model::check_invariants(w, outcome, true, violations);
            if (!violations.empty())
                throw std::invalid_argument("warm request " + std::to_string(r) + " violates " + violations.front().invariant +
                                            " on its own under this policy: " + violations.front().message);
        }
    }
    return w;
}

}  // namespace kvcheck::sim
