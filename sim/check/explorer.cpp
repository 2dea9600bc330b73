// BFS over (world, faults used). Nodes keep only their parent and the step that reached them;
// counterexamples are rebuilt by walking parents back and replaying from the initial world.
#include "sim/check/explorer.hpp"

#include "model/core.hpp"

#include <chrono>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>

namespace kvcheck::sim {

namespace {

// Open-addressing set of 64-bit state hashes mapping to node indices.
class VisitedTable {
public:
    VisitedTable() : keys_(1u << 16, 0), nodes_(1u << 16, 0) {}

    // Returns {node, inserted}; `node` is the existing node when the state was seen before.
    std::pair<std::uint32_t, bool> insert(std::uint64_t hash, std::uint32_t node) {
        if (hash == 0) hash = 1;
        if ((size_ + 1) * 2 > keys_.size()) grow();
        std::size_t i = hash & (keys_.size() - 1);
        while (keys_[i] != 0) {
            if (keys_[i] == hash) return {nodes_[i], false};
            i = (i + 1) & (keys_.size() - 1);
        }
        keys_[i] = hash;
        nodes_[i] = node;
        ++size_;
        return {node, true};
    }

private:
    void grow() {
        std::vector<std::uint64_t> old_keys(keys_.size() * 2, 0);
        std::vector<std::uint32_t> old_nodes(keys_.size() * 2, 0);
        old_keys.swap(keys_);
        old_nodes.swap(nodes_);
        size_ = 0;
        for (std::size_t i = 0; i < old_keys.size(); ++i)
            if (old_keys[i] != 0) insert(old_keys[i], old_nodes[i]);
    }
    std::vector<std::uint64_t> keys_;
    std::vector<std::uint32_t> nodes_;
    std::size_t size_ = 0;
};

struct Node {
    std::uint32_t parent;
    model::Step step;
};

struct Frontier {
    model::World world;
    std::uint32_t node;
    std::uint8_t faults;
    std::uint8_t background;
};

std::vector<model::Step> path_to(const std::vector<Node>& nodes, std::uint32_t node) {
    std::vector<model::Step> steps;
    while (node != 0) {
        steps.push_back(nodes[node].step);
        node = nodes[node].parent;
    }
    return {steps.rbegin(), steps.rend()};
}

bool all_done(const model::World& w) {
    for (const model::Request& r : w.requests)
        if (r.phase != model::Phase::done) return false;
    return true;
}

}  // namespace

ExploreReport explore(const Scope& scope, const model::Defenses& defenses, const ExploreOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    ExploreReport report;
    std::vector<Node> nodes{{0, {}}};
    VisitedTable visited;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    std::vector<Frontier> level;
    level.push_back({initial_world(scope, defenses), 0, 0, 0});
    visited.insert(kvcheck::hash_combine(model::state_hash(level.front().world), 0), 0);
    std::vector<model::Step> steps;
    std::vector<model::Violation> violations;
    // Both levels are recycled: a slot past `next_count` still holds a world from two levels up,
    // whose buffers the next new state takes over by a swap with the scratch world.
    std::size_t level_count = 1;
    std::vector<Frontier> next;
    std::size_t next_count = 0;
    model::World child = level.front().world;
    for (std::uint32_t depth = 0; level_count > 0; ++depth) {
        report.depth = depth;
        if (options.progress) options.progress(nodes.size(), depth, elapsed());
        if (depth >= scope.max_depth) {
            report.depth_cut_states = level_count;
            report.bound_hit = "max_depth";
            break;
        }
        next_count = 0;
        for (std::size_t i = 0; i < level_count; ++i) {
            const Frontier& f = level[i];
            model::enabled_steps(f.world, allowed_kinds(scope, f.faults, f.background), steps);
            if (steps.empty() && !all_done(f.world)) ++report.stuck_states;
            for (const model::Step& step : steps) {
                child = f.world;  // copy-assignment reuses the scratch world's buffers
                const model::StepOutcome outcome = model::apply(child, step);
                ++report.transitions;
                const auto faults = static_cast<std::uint8_t>(f.faults + (model::is_fault(step.kind) ? 1 : 0));
                const auto background = static_cast<std::uint8_t>(f.background + (is_background(step.kind) ? 1 : 0));
                const std::uint64_t h = kvcheck::hash_combine(model::state_hash(child), (std::uint64_t{faults} << 8) | background);
                const auto [node, inserted] = visited.insert(h, static_cast<std::uint32_t>(nodes.size()));
                if (options.keep_graph) edges.emplace_back(f.node, node);
                if (!inserted) continue;
                nodes.push_back({f.node, step});
                violations.clear();
                model::check_invariants(child, outcome, true, violations);
                if (!violations.empty() && !violates(violations, options.target)) {
                    ++report.other_violations;
                    continue;
                }
                if (!violations.empty() && !report.counterexample) {
                    Counterexample c;
                    c.steps = path_to(nodes, node);
                    c.violations = violations;
                    c.described = replay_trail(scope, defenses, c.steps).described;
                    report.counterexample = std::move(c);
                    if (options.stop_at_first) {
                        report.states = nodes.size();
                        report.seconds = elapsed();
                        report.states_per_s = static_cast<double>(report.states) / std::max(report.seconds, 1e-9);
                        return report;
                    }
                    continue;  // do not expand past a violation
                }
                if (next_count == next.size()) {
                    next.push_back({child, node, faults, background});
                } else {
                    std::swap(next[next_count].world, child);
                    next[next_count].node = node;
                    next[next_count].faults = faults;
                    next[next_count].background = background;
                }
                ++next_count;
            }
            const bool stop = options.stop != nullptr && options.stop->load();
            if (stop || nodes.size() >= options.max_states || elapsed() >= options.max_seconds) {
                report.bound_hit = stop ? "interrupted" : nodes.size() >= options.max_states ? "max_states" : "max_seconds";
                next_count = 0;
                level_count = 0;
                break;
            }
        }
        level.swap(next);
        level_count = next_count;
    }
    report.exhausted = report.bound_hit.empty();
    report.states = nodes.size();
    report.seconds = elapsed();
    report.states_per_s = static_cast<double>(report.states) / std::max(report.seconds, 1e-9);
    if (options.keep_graph && !edges.empty()) {
        using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
        Graph g(nodes.size());
        for (const auto& [from, to] : edges) boost::add_edge(from, to, g);
        std::vector<std::size_t> component(nodes.size());
        const std::size_t count = boost::strong_components(g, component.data());
        std::vector<std::uint32_t> sizes(count, 0);
        for (std::size_t c : component) ++sizes[c];
        for (std::uint32_t s : sizes) report.nontrivial_sccs += s > 1 ? 1 : 0;
    }
    return report;
}

}  // namespace kvcheck::sim
