// What the breadth-first and depth-first explorers do alike with checkpoints and counterexamples.
#include "sim/check/explore_parts.hpp"

#include "sim/check/symmetry.hpp"
#include "sim/check/trail.hpp"

namespace kvcheck::sim::detail {

std::uint64_t explored_key(const model::World& w, Reduction reduction, std::vector<std::uint32_t>& labels) {
    return reduction == Reduction::symmetry ? canonical_state_hash(w, labels) : model::state_hash(w);
}

Counterexample counterexample_at(const Nodes& nodes, std::uint32_t node,
                                 const std::vector<model::Violation>& violations, const Scope& scope,
                                 const model::Defenses& defenses, const ExploreOptions& options) {
    Counterexample found;
    found.steps = path_to(nodes, node);
    found.violations = violations;
    // Shrunk towards the invariant asked for, else the first one this state violates.
    if (options.order == Order::depth_first)
        return shrink(scope, defenses, found, options.target.empty() ? violations.front().invariant : options.target);
    found.described = replay_trail(scope, defenses, found.steps).described;
    return found;
}

namespace {

void check_same_question(const ExploreCheckpoint& c, const Scope& scope, const ExploreOptions& options,
                         std::uint64_t initial_hash) {
    if (c.scope != scope.name || c.target != options.target || c.keep_graph != options.keep_graph ||
        c.order != static_cast<std::uint8_t>(options.order) ||
        c.reduction != static_cast<std::uint8_t>(options.reduction) || c.initial_hash != initial_hash)
        throw InputError("", "--resume",
                         "the checkpoint is of another question (scope " + c.scope + ", invariant \"" + c.target +
                             "\", order " + order_name(static_cast<Order>(c.order)) + ", reduction " +
                             reduction_name(static_cast<Reduction>(c.reduction)) + (c.keep_graph ? ", liveness" : "") +
                             ") or another model version");
}

// The counterexample a resumed checkpoint carries, replayed: InputError when it violates nothing.
Counterexample resumed_counterexample(const Nodes& nodes, std::uint32_t node, const Scope& scope,
                                      const model::Defenses& defenses, const ExploreOptions& options) {
    const TrailResult replayed = replay_trail(scope, defenses, path_to(nodes, node));
    if (replayed.violations.empty())
        throw InputError("", "--resume", "the checkpoint's counterexample violates nothing when replayed");
    return counterexample_at(nodes, node, replayed.violations, scope, defenses, options);
}

}  // namespace

std::uint32_t resume_common(const ExploreCheckpoint& c, const Scope& scope, const model::Defenses& defenses,
                            const ExploreOptions& options, std::uint64_t initial_hash, Nodes& nodes,
                            VisitedTable& visited, PathReplayer& replayer, ExploreReport& report) {
    check_same_question(c, scope, options, initial_hash);
    for (std::size_t i = 0; i < c.parents.size(); ++i) nodes.push_back({c.parents[i], c.steps[i]});
    for (std::size_t i = 0; i < c.keys.size(); ++i)
        visited.restore(c.keys[i], c.keep_graph ? c.key_nodes[i] : 0,
                        c.key_depths.empty() ? std::uint16_t{0} : c.key_depths[i]);
    report.depth = c.depth;
    report.transitions = c.transitions;
    report.stuck_states = c.stuck_states;
    report.other_violations = c.other_violations;
    report.depth_cut_states = c.depth_cut_states;
    if (c.counterexample_node != 0) {
        replayer.rebuild(c.counterexample_node);  // every step of its path enabled, or an input error
        report.counterexample = resumed_counterexample(nodes, c.counterexample_node, scope, defenses, options);
    }
    return c.counterexample_node;
}

ExploreReport stopped_while_resuming(const ExploreCheckpoint& c) {
    ExploreReport report;
    report.bound_hit = "interrupted";
    report.depth = c.depth;
    report.states = c.keys.size();
    report.transitions = c.transitions;
    report.stuck_states = c.stuck_states;
    report.other_violations = c.other_violations;
    report.depth_cut_states = c.depth_cut_states;
    report.seconds = c.seconds;
    report.states_per_s = static_cast<double>(report.states) / std::max(report.seconds, 1e-9);
    report.checkpoint = c;
    return report;
}

ExploreCheckpoint checkpoint_header(const Scope& scope, const ExploreOptions& options, std::uint64_t initial_hash) {
    ExploreCheckpoint c;
    c.scope = scope.name;
    c.target = options.target;
    c.keep_graph = options.keep_graph;
    c.order = static_cast<std::uint8_t>(options.order);
    c.reduction = static_cast<std::uint8_t>(options.reduction);
    c.initial_hash = initial_hash;
    return c;
}

}  // namespace kvcheck::sim::detail
