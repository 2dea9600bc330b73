// BFS over (world, budgets used), and the entry point that chooses the search order (the
// depth-first search is in explorer_dfs.cpp). Nodes keep only their parent and the step that
// reached them; counterexamples are rebuilt by walking parents back and replaying from the initial
// world. The frontier holds states encoded by model::StateCodec in chunks the two live levels share.
#include "sim/check/explorer.hpp"

#include <array>
#include <chrono>
#include <memory>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>

#include "model/driver.hpp"
#include "sim/check/explore_parts.hpp"

namespace kvcheck::sim {

namespace {

using namespace detail;

// Encoded states live in 256 KiB chunks that the two levels alive at once share: a chunk the
// expanding level has read to its end goes back here at once and the level being filled takes
// it, so the frontier needs about the widest level's bytes rather than the two widest levels'.
// A chunk that small is still in cache when it is written again (16 MiB chunks cost 5-9 % more
// time). Chunks are never zeroed: only what encode wrote is read.
class ChunkPool {
public:
    struct Chunk {
        std::unique_ptr<std::byte[]> bytes;
        std::size_t size = 0;
    };
    Chunk take(std::size_t at_least) {
        if (!free_.empty() && free_.back().size >= at_least) {
            Chunk c = std::move(free_.back());
            free_.pop_back();
            return c;
        }
        const std::size_t size = std::max(kChunkBytes, at_least);
        return {std::make_unique_for_overwrite<std::byte[]>(size), size};
    }
    void give(Chunk chunk) { free_.push_back(std::move(chunk)); }

private:
    static constexpr std::size_t kChunkBytes = std::size_t{256} << 10;
    std::vector<Chunk> free_;
};

// One BFS level: its encoded states in pool chunks, in the order they were added, and per state
// its node and the budgets its path has used.
class Level {
public:
    struct Entry {
        const std::byte* state;
        std::uint32_t chunk;  // index into chunks_
        std::uint32_t node;
        Spent spent;
    };

    void add(ChunkPool& pool, const model::StateCodec& codec, const model::World& w, std::uint32_t node, Spent spent) {
        const std::size_t length = codec.encoded_size(w);
        if (chunks_.empty() || chunks_.back().size - used_ < length) {
            chunks_.push_back(pool.take(length));
            used_ = 0;
        }
        std::byte* at = chunks_.back().bytes.get() + used_;
        codec.encode(w, at);
        used_ += length;
        entries_.push_back({at, static_cast<std::uint32_t>(chunks_.size() - 1), node, spent});
    }
    // Gives the pool every chunk that holds only states before state i: the expander has read them.
    void release_before(ChunkPool& pool, std::size_t i) {
        for (; released_ < entries_[i].chunk; ++released_) pool.give(std::move(chunks_[released_]));
    }
    void clear(ChunkPool& pool) {
        for (; released_ < chunks_.size(); ++released_) pool.give(std::move(chunks_[released_]));
        chunks_.clear();
        released_ = 0;
        used_ = 0;
        entries_.clear();
    }
    std::size_t size() const { return entries_.size(); }
    const Entry& operator[](std::size_t i) const { return entries_[i]; }

private:
    std::vector<ChunkPool::Chunk> chunks_;
    std::size_t released_ = 0;  // chunks_ before this one are back in the pool
    std::size_t used_ = 0;      // bytes written to the last chunk
    std::vector<Entry> entries_;
};

}  // namespace

const char* reduction_name(Reduction reduction) {
    switch (reduction) {
        case Reduction::none: return "none";
        case Reduction::symmetry: return "symmetry";
    }
    KV_UNREACHABLE("unknown reduction");
}

std::optional<Reduction> reduction_from_name(const std::string& name) {
    for (const Reduction r : {Reduction::none, Reduction::symmetry})
        if (name == reduction_name(r)) return r;
    return std::nullopt;
}

const char* order_name(Order order) {
    switch (order) {
        case Order::breadth_first: return "bfs";
        case Order::depth_first: return "dfs";
    }
    KV_UNREACHABLE("unknown search order");
}

std::optional<Order> order_from_name(const std::string& name) {
    for (const Order o : {Order::breadth_first, Order::depth_first})
        if (name == order_name(o)) return o;
    return std::nullopt;
}

ExploreReport explore(const Scope& scope, const model::Defenses& defenses, const ExploreOptions& options) {
    try {
        initial_world(scope, defenses);
    } catch (const WarmUpViolation& broken) {
        // Broken before any interleaving: the warm-up is the counterexample (a stop-at-first answer).
        ExploreReport report;
        const TrailResult trail = replay_trail(broken.cold, defenses, broken.steps);
        report.counterexample = Counterexample{broken.steps, broken.violations, trail.described};
        report.counterexample_scope = broken.cold;
        return report;
    }
    if (options.order == Order::depth_first) return explore_depth_first(scope, defenses, options);
    const auto started = std::chrono::steady_clock::now();
    double seconds_before = 0;  // spent by the runs a checkpoint continues
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    ExploreReport report;
    Exploration exploration(scope, defenses);
    const model::World initial = exploration.initial();
    const std::uint64_t initial_hash = model::state_hash(initial);
    std::vector<std::uint32_t> labels;  // scratch for canonical_state_hash
    auto state_key = [&](const model::World& w) { return explored_key(w, options.reduction, labels); };
    Nodes nodes;
    VisitedTable visited(options.keep_graph, false);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    const model::StateCodec codec(initial);
    ChunkPool pool;
    Level level;
    Level next;
    std::uint32_t depth = 0;
    std::uint32_t counterexample_node = 0;
    if (options.resume != nullptr) {
        const ExploreCheckpoint& c = *options.resume;
        PathReplayer replayer(exploration, initial, nodes);
        counterexample_node =
            resume_common(c, scope, defenses, options, initial_hash, nodes, visited, replayer, report);
        edges = c.edges;
        depth = c.depth;
        seconds_before = c.seconds;
        // Rebuilding a large frontier takes a while; a stop meanwhile leaves the checkpoint as it was.
        for (Level* to : {&level, &next})
            for (std::uint32_t id : to == &level ? c.level : c.next) {
                if (options.stop != nullptr && options.stop->load()) {
                    ExploreReport stopped = stopped_while_resuming(c);
                    stopped.counterexample = std::move(report.counterexample);
                    return stopped;
                }
                const Frontier& f = replayer.rebuild(id);
                to->add(pool, codec, f.world, f.node, f.spent);
            }
    } else {
        nodes.push_back({0, {}});
        visited.insert(visited_key(state_key(initial), {}), 0);
        level.add(pool, codec, initial, 0, {});
    }
    auto finish_timing = [&] {
        report.states = nodes.size();
        report.seconds = seconds_before + elapsed();
        report.states_per_s = static_cast<double>(report.states) / std::max(report.seconds, 1e-9);
    };
    // What a stop leaves: the rest of this level and the next level found so far.
    auto save_checkpoint = [&](std::size_t expanded) {
        ExploreCheckpoint c = checkpoint_header(scope, options, initial_hash);
        for (const Node& n : nodes) {
            c.parents.push_back(n.parent);
            c.steps.push_back(n.step);
        }
        visited.for_each([&](std::uint64_t key, std::uint32_t node, std::uint16_t) {
            c.keys.push_back(key);
            if (options.keep_graph) c.key_nodes.push_back(node);
        });
        c.depth = depth;
        for (std::size_t i = expanded; i < level.size(); ++i) c.level.push_back(level[i].node);
        for (std::size_t i = 0; i < next.size(); ++i) c.next.push_back(next[i].node);
        if (c.level.empty()) {
            c.level.swap(c.next);
            ++c.depth;
        }
        c.transitions = report.transitions;
        c.stuck_states = report.stuck_states;
        c.other_violations = report.other_violations;
        c.counterexample_node = counterexample_node;
        c.seconds = seconds_before + elapsed();
        c.edges = edges;
        report.checkpoint = std::move(c);
    };
    // A state's successors are built and hashed, and their visited-set cells fetched, one state
    // before they are settled (probed, numbered, checked, queued): the fetches then overlap the
    // next state's work instead of stalling the probe. Settling keeps breadth-first order.
    struct Batch {
        std::vector<Child> children;  // scratch worlds, reused state after state
        std::vector<model::Step> steps;
        std::uint32_t node = 0;
        bool stuck = false;
    };
    std::array<Batch, 2> batches;
    auto build = [&](const Level::Entry& f, Batch& b) {
        b.node = f.node;
        if (b.children.empty()) b.children.push_back({initial, {}, 0, {}});
        codec.decode(f.state, b.children[0].world);  // the state itself until its first step is applied
        exploration.successors(b.children[0].world, f.spent, b.steps);
        b.stuck = b.steps.empty() && !all_done(b.children[0].world);
        while (b.children.size() < b.steps.size()) b.children.push_back({initial, {}, 0, {}});
        for (std::size_t k = 0; k < b.steps.size(); ++k) {
            Child& c = b.children[k];
            if (k > 0) codec.decode(f.state, c.world);
            exploration.take(c.world, b.steps[k], c.outcome);
            c.spent = exploration.after(f.spent, b.steps[k]);
            c.key = visited_key(state_key(c.world), c.spent);
            visited.prefetch(c.key);
        }
    };
    std::vector<model::Violation> violations;
    // Returns true when the run stops at this batch's counterexample.
    auto settle = [&](const Batch& b) {
        if (b.stuck) ++report.stuck_states;
        for (std::size_t k = 0; k < b.steps.size(); ++k) {
            const Child& c = b.children[k];
            ++report.transitions;
            const auto [node, inserted] = visited.insert(c.key, static_cast<std::uint32_t>(nodes.size()));
            if (options.keep_graph) edges.emplace_back(b.node, node);
            if (!inserted) continue;
            nodes.push_back({b.node, b.steps[k]});
            violations = exploration.check(c.world, c.outcome);
            if (!violations.empty() && !violates(violations, options.target)) {
                ++report.other_violations;
                continue;
            }
            if (!violations.empty() && !report.counterexample) {
                report.counterexample = counterexample_at(nodes, node, violations, scope, defenses, options);
                counterexample_node = node;
                if (options.stop_at_first) return true;
                continue;  // do not expand past a violation
            }
            next.add(pool, codec, c.world, node, c.spent);
        }
        return false;
    };
    bool continuing_level = options.resume != nullptr;  // a resumed level keeps the next level found so far
    for (; level.size() > 0; ++depth) {
        report.depth = depth;
        if (options.progress) options.progress(nodes.size(), depth, seconds_before + elapsed());
        if (depth >= scope.max_depth) {
            report.depth_cut_states = level.size();
            report.bound_hit = "max_depth";
            break;
        }
        if (!continuing_level) next.clear(pool);
        continuing_level = false;
        const Batch* pending = nullptr;  // built, not settled yet
        // A run stops right after settling the node whose successors met a bound, before the next
        // node is expanded: node i is built ahead (to overlap its work with settling node i - 1)
        // but stays in the frontier. So a resume at the bound it stopped at expands nothing, and
        // a run resumed at any bound stops where an uninterrupted run with that bound stops.
        const auto stop_before = [&](std::size_t i, bool stop) {
            report.bound_hit = stop ? "interrupted" : nodes.size() >= options.max_states ? "max_states" : "max_seconds";
            save_checkpoint(i);
            next.clear(pool);
        };
        for (std::size_t i = 0; i < level.size(); ++i) {
            const bool stopped = options.stop != nullptr && options.stop->load();
            if (pending == nullptr && (stopped || nodes.size() >= options.max_states)) {
                stop_before(i, stopped);
                break;
            }
            Batch& b = batches[i & 1];
            level.release_before(pool, i);
            build(level[i], b);
            if (pending != nullptr && settle(*pending)) {
                finish_timing();
                return report;
            }
            pending = &b;
            const bool stop = options.stop != nullptr && options.stop->load();
            const bool check_clock =
                (i & 63) == 63 || i + 1 == level.size();  // the clock costs more than a small state
            if (stop || nodes.size() >= options.max_states || (check_clock && elapsed() >= options.max_seconds)) {
                pending = nullptr;
                stop_before(i, stop);
                break;
            }
        }
        if (pending != nullptr && settle(*pending)) {
            finish_timing();
            return report;
        }
        std::swap(level, next);
    }
    report.exhausted = report.bound_hit.empty();
    finish_timing();
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
