// Depth-first exploration (`kvcheck check --order dfs`). The frontier is a stack of encoded states:
// a state's successors are pushed so that the first enabled step is expanded first, and the
// stack holds about depth x branching states instead of a whole breadth-first level. With the
// depth bound, a state first reached on a long path is expanded again when a shorter path reaches
// it (VisitedTable::insert_at_depth), so every state within the bound is explored, as breadth
// first does. Counterexamples end on the first violating state found and are then shrunk.
#include <chrono>

#include "model/driver.hpp"
#include "sim/check/explore_parts.hpp"

namespace kvcheck::sim::detail {

namespace {

// The states waiting to be expanded, encoded one after another in one buffer, the last pushed
// on top; popping one gives its bytes back.
class StateStack {
public:
    struct Entry {
        std::size_t offset;
        std::uint32_t node;
        std::uint32_t depth;
        Spent spent;
        bool again;  // a state expanded before, reached again by a shorter path
    };

    void push(const model::StateCodec& codec, const model::World& w, Entry e) {
        e.offset = bytes_.size();
        bytes_.resize(e.offset + codec.encoded_size(w));
        codec.encode(w, bytes_.data() + e.offset);
        entries_.push_back(e);
    }
    void pop() {
        bytes_.resize(entries_.back().offset);
        entries_.pop_back();
    }
    const Entry& top() const { return entries_.back(); }
    const std::byte* state(const Entry& e) const { return bytes_.data() + e.offset; }
    bool empty() const { return entries_.empty(); }
    const std::vector<Entry>& entries() const { return entries_; }

private:
    std::vector<std::byte> bytes_;
    std::vector<Entry> entries_;
};

}  // namespace

ExploreReport explore_depth_first(const Scope& scope, const model::Defenses& defenses, const ExploreOptions& options) {
    KV_ASSERT(!options.keep_graph, "the depth-first search does not keep the explored graph");
    const auto started = std::chrono::steady_clock::now();
    double seconds_before = 0;  // spent by the runs a checkpoint continues
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    ExploreReport report;
    Exploration exploration(scope, defenses);
    const model::World initial = exploration.initial();
    const std::uint64_t initial_hash = model::state_hash(initial);
    std::vector<std::uint32_t> labels;  // scratch for the symmetry reduction
    Nodes nodes;
    VisitedTable visited(false, true);
    const model::StateCodec codec(initial);
    StateStack stack;
    std::uint32_t counterexample_node = 0;
    if (options.resume != nullptr) {
        const ExploreCheckpoint& c = *options.resume;
        PathReplayer replayer(exploration, initial, nodes);
        counterexample_node =
            resume_common(c, scope, defenses, options, initial_hash, nodes, visited, replayer, report);
        seconds_before = c.seconds;
        for (std::size_t i = 0; i < c.level.size(); ++i) {
            if (options.stop != nullptr && options.stop->load()) {
                ExploreReport stopped = stopped_while_resuming(c);
                stopped.counterexample = std::move(report.counterexample);
                return stopped;
            }
            const Frontier& f = replayer.rebuild(c.level[i]);
            stack.push(codec, f.world, {0, f.node, f.depth, f.spent, c.level_again[i] != 0});
        }
    } else {
        nodes.push_back({0, {}});
        visited.insert_at_depth(visited_key(explored_key(initial, options.reduction, labels), {}), 0);
        stack.push(codec, initial, {0, 0, 0, {}, false});
    }
    auto finish_timing = [&] {
        report.states = visited.size();
        report.seconds = seconds_before + elapsed();
        report.states_per_s = static_cast<double>(report.states) / std::max(report.seconds, 1e-9);
    };
    auto save_checkpoint = [&] {
        ExploreCheckpoint c = checkpoint_header(scope, options, initial_hash);
        for (const Node& n : nodes) {
            c.parents.push_back(n.parent);
            c.steps.push_back(n.step);
        }
        visited.for_each([&](std::uint64_t key, std::uint32_t, std::uint16_t depth) {
            c.keys.push_back(key);
            c.key_depths.push_back(depth);
        });
        c.depth = report.depth;
        for (const StateStack::Entry& e : stack.entries()) {
            c.level.push_back(e.node);
            c.level_again.push_back(e.again ? 1 : 0);
        }
        c.transitions = report.transitions;
        c.stuck_states = report.stuck_states;
        c.other_violations = report.other_violations;
        c.depth_cut_states = report.depth_cut_states;
        c.counterexample_node = counterexample_node;
        c.seconds = seconds_before + elapsed();
        report.checkpoint = std::move(c);
    };
    std::vector<Child> children;  // scratch worlds, reused state after state
    std::vector<model::Step> steps;
    std::vector<model::Violation> violations;
    struct Accepted {
        std::size_t child;
        std::uint32_t node;
        bool again;
    };
    std::vector<Accepted> accepted;
    for (std::uint64_t expansions = 0; !stack.empty();) {
        // A run stops before it expands the next state, so a resume continues exactly there.
        const bool stop = options.stop != nullptr && options.stop->load();
        const bool check_clock = (expansions & 63) == 63;  // the clock costs more than a small state
        if (stop || visited.size() >= options.max_states || (check_clock && elapsed() >= options.max_seconds)) {
            report.bound_hit = stop                                   ? "interrupted"
                               : visited.size() >= options.max_states ? "max_states"
                                                                      : "max_seconds";
            save_checkpoint();
            break;
        }
        const StateStack::Entry e = stack.top();
        if (e.depth >= scope.max_depth) {
            ++report.depth_cut_states;
            stack.pop();
            continue;
        }
        if (options.progress && (expansions & 4095) == 0)
            options.progress(visited.size(), e.depth, seconds_before + elapsed());
        ++expansions;
        report.depth = std::max(report.depth, e.depth);
        if (children.empty()) children.push_back({initial, {}, 0, {}});
        codec.decode(stack.state(e), children[0].world);  // the state itself until its first step is applied
        exploration.successors(children[0].world, e.spent, steps);
        if (steps.empty() && !e.again && !all_done(children[0].world)) ++report.stuck_states;
        while (children.size() < steps.size()) children.push_back({initial, {}, 0, {}});
        for (std::size_t k = 0; k < steps.size(); ++k) {
            Child& c = children[k];
            if (k > 0) codec.decode(stack.state(e), c.world);
            exploration.take(c.world, steps[k], c.outcome);
            c.spent = exploration.after(e.spent, steps[k]);
            c.key = visited_key(explored_key(c.world, options.reduction, labels), c.spent);
        }
        stack.pop();  // every successor is decoded: its bytes may be reused
        accepted.clear();
        for (std::size_t k = 0; k < steps.size(); ++k) {
            const Child& c = children[k];
            ++report.transitions;
            const VisitedTable::Visit visit = visited.insert_at_depth(c.key, e.depth + 1);
            if (visit == VisitedTable::Visit::known) continue;
            nodes.push_back({e.node, steps[k]});
            const auto node = static_cast<std::uint32_t>(nodes.size() - 1);
            if (visit == VisitedTable::Visit::shallower) {  // checked when first reached
                accepted.push_back({k, node, true});
                continue;
            }
            violations = exploration.check(c.world, c.outcome);
            if (violations.empty()) {
                accepted.push_back({k, node, false});
                continue;
            }
            visited.keep_out(c.key);  // do not expand past a violation
            if (!violates(violations, options.target)) {
                ++report.other_violations;
            } else if (!report.counterexample) {
                report.counterexample = counterexample_at(nodes, node, violations, scope, defenses, options);
                counterexample_node = node;
                if (options.stop_at_first) {
                    finish_timing();
                    return report;
                }
            }
        }
        for (auto a = accepted.rbegin(); a != accepted.rend(); ++a) {
            const Child& c = children[a->child];
            stack.push(codec, c.world, {0, a->node, e.depth + 1, c.spent, a->again});
        }
    }
    if (report.bound_hit.empty() && report.depth_cut_states > 0) report.bound_hit = "max_depth";
    report.exhausted = report.bound_hit.empty();
    finish_timing();
    return report;
}

}  // namespace kvcheck::sim::detail
