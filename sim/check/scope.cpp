// Named scopes and the initial world they describe.
#include "sim/check/scope.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "model/driver.hpp"
#include "model/invariants.hpp"

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

std::uint32_t leave_load_kinds() { return kind_bit(StepKind::stop_waiting) | kind_bit(StepKind::abort); }

std::uint32_t allowed_kinds(const Scope& scope, std::uint8_t faults_used, std::uint8_t background_used) {
    std::uint32_t kinds = scope.step_kinds;
    if (faults_used >= scope.max_faults) kinds &= ~all_fault_kinds();
    if (background_used >= scope.max_background) kinds &= ~background_kinds();
    return kinds;
}

std::uint32_t all_fault_kinds() {
    static const std::uint32_t kBits = [] {  // asked for every state an explorer expands
        std::uint32_t b = 0;
        for (int k = 0; k < model::kStepKindCount; ++k)
            if (model::is_fault(static_cast<StepKind>(k))) b |= kind_bit(static_cast<StepKind>(k));
        return b;
    }();
    return kBits;
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
    if (name == "tier") {
        // The small scope with a host/disk tier of 2,560 bytes that drops entries for room
        // (model::Limits::tier_eviction): one offload of a c1 block and its indexer pages fills
        // it, so a second offload drops the first's entries; two background actions.
        s = named_scope("small");
        s.name = name;
        s.limits.disk_capacity_bytes = 2'560;
        s.limits.tier_eviction = true;
        s.max_background = 2;
        return s;
    }
    if (name == "load-wait") {
        // The small scope without faults where a request may stop waiting on its loads or end at
        // them (model stop_waiting and abort: the simulator's compute.max_load_wait_us and
        // load_failure_policy fail): once an offload has put part of request 0's prefix on disk,
        // request 1 may wait for it and give up, and the load it leaves lands while request 1
        // reads, finishes, or is gone.
        s = named_scope("small");
        s.name = name;
        s.step_kinds = actor_kinds() | background_kinds() | leave_load_kinds();
        s.max_faults = 0;
        s.max_background = 2;
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
    if (name == "session") {
        // Request 0, a first turn, has run to the end: its 64-token prompt and its 64-token answer
        // are cached (the answer as decode wrote it: a c4 segment, SWA blocks, linear checkpoints).
        // Request 1 is the next turn: it opens with both, 128 tokens (on the LCM grain), and
        // resumes up to the end of the answer. The budget holds request 0's cache, not both.
        s.requests = {{{1, 2, 3, 4}, 64, 64, true}, {{1, 2, 3, 4, 5, 6, 7, 8, 9}, 144, 16, false, 0}};
        s.limits.gpu_budget_bytes = 50'000;
        s.max_faults = 1;
        s.max_background = 2;
        s.max_depth = 60;
        return s;
    }
    if (name == "sampling") {
        // Two sampled answers of one 80-token prompt, with extents of up to 64 tokens: the
        // answers' entries cover the same positions with different content, and an extent may
        // run past the prompt's end, where only the prompt is shared.
        s.requests = {{{1, 2, 3, 4, 5}, 80, 32}, {{1, 2, 3, 4, 5}, 80, 32, false, -1, 1}};
        s.limits.gpu_budget_bytes = 40'000;
        s.limits.extent_tokens = 64;
        s.max_faults = 1;
        s.max_background = 1;
        s.max_depth = 60;
        return s;
    }
    if (name == "rollout") {
        // Rollout intra-request: request 0 has run to the end; request 1 is a second sampled
        // answer of it, in its reuse scope, so it may reuse request 0's prompt; request 2 extends
        // that prompt but is another request, which may not (RO1_rollout_scope).
        s.requests = {{{1, 2, 3, 4, 5, 6}, 96, 16, true},
                      {{1, 2, 3, 4, 5, 6}, 96, 16, false, -1, 1},
                      {{1, 2, 3, 4, 5, 6, 7}, 112, 0}};
        s.rollout = model::Rollout::intra_request;
        s.limits.gpu_budget_bytes = 40'000;
        s.max_faults = 1;
        s.max_background = 1;
        s.max_depth = 60;
        return s;
    }
    std::string known;
    for (const std::string& n : scope_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown scope '" + name + "' (known: " + known + ")");
}

std::vector<std::string> scope_names() {
    return {"reference", "small", "tier", "load-wait", "pin-epoch", "extents", "session", "sampling", "rollout"};
}

std::string home_scope(const model::PolicyInfo& policy) {
    return policy.defenses.rollout_scope ? "reference" : "rollout";
}

std::string turn_problem(const Scope& scope, std::size_t i) {
    const RequestTemplate& t = scope.requests[i];
    if (t.continues < 0) return "";
    if (static_cast<std::size_t>(t.continues) >= i) return "a request continues an earlier one (a smaller index)";
    const RequestTemplate& prior = scope.requests[static_cast<std::size_t>(t.continues)];
    const std::size_t whole = prior.input_tokens / scope.content_block_tokens;
    if (t.input_tokens < prior.input_tokens + prior.output_tokens)
        return "the prompt must hold request " + std::to_string(t.continues) + "'s prompt and answer (" +
               std::to_string(prior.input_tokens + prior.output_tokens) + " tokens)";
    if (whole == 0 || t.ids.size() < whole ||
        !std::equal(prior.ids.begin(), prior.ids.begin() + static_cast<std::ptrdiff_t>(whole), t.ids.begin()))
        return "the ids must start with request " + std::to_string(t.continues) + "'s whole blocks";
    return "";
}

namespace {

// The earlier request whose sampled answer request i is (sample 0, the same prompt, neither a
// turn), or i itself when it has none.
std::size_t first_answer(const Scope& scope, std::size_t i) {
    const RequestTemplate& t = scope.requests[i];
    if (t.sample == 0 || t.continues >= 0) return i;
    for (std::size_t j = 0; j < i; ++j) {
        const RequestTemplate& c = scope.requests[j];
        if (c.sample == 0 && c.continues < 0 && c.ids == t.ids && c.input_tokens == t.input_tokens) return j;
    }
    return i;
}

}  // namespace

model::World initial_world(const Scope& scope, const model::Defenses& defenses) {
    model::World w(std::make_shared<model::ModelConfig>(scope.model), defenses, scope.limits, scope.rollout);
    std::vector<std::shared_ptr<const model::RequestSpec>> specs;
    for (std::uint32_t uid = 0; uid < scope.requests.size(); ++uid) {
        const RequestTemplate& t = scope.requests[uid];
        if (const std::string why = turn_problem(scope, uid); !why.empty())
            throw std::invalid_argument("request " + std::to_string(uid) + ": " + why);
        // A sampled answer forks from the first answer of the same prompt when the scope has one
        // (model::sample_of: its reuse scope too); else it is a request of its own.
        const std::size_t first = first_answer(scope, uid);
        auto spec = std::make_shared<model::RequestSpec>(
            first < uid ? model::sample_of(*specs[first], uid, t.sample)
            : t.continues < 0
                ? model::make_request_spec(uid, t.ids, scope.content_block_tokens, t.input_tokens, t.output_tokens)
                : model::make_turn_spec(uid, specs[static_cast<std::size_t>(t.continues)],
                                        scope.requests[static_cast<std::size_t>(t.continues)].input_tokens /
                                            scope.content_block_tokens,
                                        t.ids, scope.content_block_tokens, t.input_tokens, t.output_tokens));
        spec->output_tokens = t.output_tokens;  // a sampled answer's own length (sample_of copies the first's)
        spec->sample = t.sample;
        specs.push_back(std::move(spec));
        w.add_request(specs.back());
    }
    std::vector<model::Step> steps;
    model::Driver driver;
    for (std::uint32_t r = 0; r < scope.requests.size(); ++r) {
        if (!scope.requests[r].warm) continue;
        std::vector<model::Step> taken;
        while (w.requests[r].phase != model::Phase::done) {
            model::enabled_steps(w, actor_kinds(), steps);
            const auto own = std::find_if(steps.begin(), steps.end(), [&](const model::Step& s) {
                return s.kind == StepKind::io_complete || s.target == r;
            });
            if (own == steps.end())
                throw std::invalid_argument("warm request " + std::to_string(r) + " cannot run to the end on its own");
            taken.push_back(*own);
            const std::vector<model::Violation>& violations = driver.step(w, *own);
            if (!violations.empty()) {
                Scope cold = scope;
                for (std::size_t later = r; later < cold.requests.size(); ++later) cold.requests[later].warm = false;
                throw WarmUpViolation("warm request " + std::to_string(r) + " violates " +
                                          violations.front().invariant +
                                          " on its own under this policy: " + violations.front().message,
                                      std::move(cold), std::move(taken), violations);
            }
        }
    }
    return w;
}

}  // namespace kvcheck::sim
