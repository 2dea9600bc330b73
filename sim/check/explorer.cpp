// BFS over (world, budgets used). Nodes keep only their parent and the step that reached them;
// counterexamples are rebuilt by walking parents back and replaying from the initial world. The
// frontier holds states encoded by model::StateCodec in chunks the two live levels share.
#include "sim/check/explorer.hpp"

#include "model/core.hpp"
#include "model/snapshot.hpp"
#include "sim/check/symmetry.hpp"
#include "sim/input_error.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>

namespace kvcheck::sim {

namespace {

// Open-addressing set of 64-bit state hashes, mapping each to its node index when asked to keep
// nodes (the explored graph's edges need the node a repeated state is; nothing else does, and
// without them an insert touches one cache line instead of two). The arrays are mapped directly:
// fresh mappings are already zero, and they ask for 2 MiB pages, since every probe lands on a
// random page of a table far larger than what the TLB covers in 4 KiB pages (docs/checker.md).
class VisitedTable {
public:
    explicit VisitedTable(bool keep_nodes) : keep_nodes_(keep_nodes) { allocate(kInitialCells); }
    ~VisitedTable() { release(keys_, nodes_, cells_); }
    VisitedTable(const VisitedTable&) = delete;
    VisitedTable& operator=(const VisitedTable&) = delete;

    // Starts fetching the cells an insert of `hash` probes first: the children of one state
    // fetch theirs in parallel, not one miss each in turn.
    void prefetch(std::uint64_t hash) const {
        if (hash == 0) hash = 1;
        const std::size_t i = hash & (cells_ - 1);
        __builtin_prefetch(&keys_[i]);
        if (keep_nodes_) __builtin_prefetch(&nodes_[i]);
    }

    // Returns {node, inserted}. A repeated state's node is its first node when nodes are kept,
    // else `node` itself.
    std::pair<std::uint32_t, bool> insert(std::uint64_t hash, std::uint32_t node) {
        if (hash == 0) hash = 1;  // 0 marks an empty cell
        if ((size_ + 1) * 2 > cells_) grow();
        std::size_t i = hash & (cells_ - 1);
        while (keys_[i] != 0) {
            if (keys_[i] == hash) return {keep_nodes_ ? nodes_[i] : node, false};
            i = (i + 1) & (cells_ - 1);
        }
        keys_[i] = hash;
        if (keep_nodes_) nodes_[i] = node;
        ++size_;
        return {node, true};
    }

    // Calls visit(key, node) for every key in the table, in cell order; node is 0 unless nodes
    // are kept.
    template <typename Visit>
    void for_each(Visit&& visit) const {
        for (std::size_t i = 0; i < cells_; ++i)
            if (keys_[i] != 0) visit(keys_[i], keep_nodes_ ? nodes_[i] : 0u);
    }

private:
    static constexpr std::size_t kInitialCells = std::size_t{1} << 16;

    void allocate(std::size_t cells) {
        cells_ = cells;
        keys_ = static_cast<std::uint64_t*>(map(cells * sizeof(std::uint64_t)));
        nodes_ = keep_nodes_ ? static_cast<std::uint32_t*>(map(cells * sizeof(std::uint32_t))) : nullptr;
    }
    static void* map(std::size_t bytes) {
        void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) throw std::bad_alloc();
        madvise(m, bytes, MADV_HUGEPAGE);  // a hint: refused, the table works on small pages
        return m;
    }
    static void release(std::uint64_t* keys, std::uint32_t* nodes, std::size_t cells) {
        munmap(keys, cells * sizeof(std::uint64_t));
        if (nodes != nullptr) munmap(nodes, cells * sizeof(std::uint32_t));
    }
    void grow() {
        std::uint64_t* const old_keys = keys_;
        std::uint32_t* const old_nodes = nodes_;
        const std::size_t old_cells = cells_;
        allocate(old_cells * 2);
        size_ = 0;
        for (std::size_t i = 0; i < old_cells; ++i)
            if (old_keys[i] != 0) insert(old_keys[i], old_nodes != nullptr ? old_nodes[i] : 0);
        release(old_keys, old_nodes, old_cells);
    }

    bool keep_nodes_;
    std::size_t cells_ = 0;
    std::uint64_t* keys_ = nullptr;
    std::uint32_t* nodes_ = nullptr;  // null unless nodes are kept
    std::size_t size_ = 0;
};

struct Node {
    std::uint32_t parent;
    model::Step step;
};
// A deque: it grows without moving what it holds, so millions of nodes are written once.
using Nodes = std::deque<Node>;

// A successor of the state being expanded, kept until its visited-set probe.
struct Child {
    model::World world;
    model::StepOutcome outcome;
    std::uint64_t key = 0;
    std::uint8_t faults = 0;
    std::uint8_t background = 0;
};

// A state rebuilt from a checkpoint's path, with its node and the budgets its path has used.
struct Frontier {
    model::World world;
    std::uint32_t node;
    std::uint8_t faults;
    std::uint8_t background;
};

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
        std::uint8_t faults;
        std::uint8_t background;
    };

    void add(ChunkPool& pool, const model::StateCodec& codec, const model::World& w, std::uint32_t node, std::uint8_t faults,
             std::uint8_t background) {
        const std::size_t length = codec.encoded_size(w);
        if (chunks_.empty() || chunks_.back().size - used_ < length) {
            chunks_.push_back(pool.take(length));
            used_ = 0;
        }
        std::byte* at = chunks_.back().bytes.get() + used_;
        codec.encode(w, at);
        used_ += length;
        entries_.push_back({at, static_cast<std::uint32_t>(chunks_.size() - 1), node, faults, background});
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

std::vector<model::Step> path_to(const Nodes& nodes, std::uint32_t node) {
    std::vector<model::Step> steps;
    while (node != 0) {
        steps.push_back(nodes[node].step);
        node = nodes[node].parent;
    }
    return {steps.rbegin(), steps.rend()};
}

// Rebuilds the frontier worlds of a checkpoint by replaying each node's path. Nodes of a level come
// in breadth-first order, so consecutive ones share most of their path: the worlds along the last
// path stay on a stack and only the differing suffix is replayed.
class PathReplayer {
public:
    PathReplayer(const model::World& initial, const Nodes& nodes) : nodes_(nodes) {
        stack_.push_back({initial, 0, 0, 0});
    }

    const Frontier& rebuild(std::uint32_t node) {
        path_.clear();
        for (std::uint32_t n = node; n != 0; n = nodes_[n].parent) path_.push_back(n);
        std::reverse(path_.begin(), path_.end());
        std::size_t shared = 0;
        while (shared < path_.size() && shared + 1 < stack_.size() && stack_[shared + 1].node == path_[shared]) ++shared;
        stack_.erase(stack_.begin() + static_cast<std::ptrdiff_t>(shared + 1), stack_.end());
        for (std::size_t k = shared; k < path_.size(); ++k) {
            Frontier f = stack_.back();
            const model::Step& step = nodes_[path_[k]].step;
            // The checkpoint's checksum guards against damage, not against a file made to pass it.
            if (!model::enabled(f.world, step))
                throw InputError("", "--resume", "the checkpoint's node " + std::to_string(path_[k]) + " takes a step that is not enabled there");
            model::apply(f.world, step);
            f.node = path_[k];
            f.faults = static_cast<std::uint8_t>(f.faults + (model::is_fault(step.kind) ? 1 : 0));
            f.background = static_cast<std::uint8_t>(f.background + (is_background(step.kind) ? 1 : 0));
            stack_.push_back(std::move(f));
        }
        KV_ASSERT(stack_.back().node == node, "the replayed path ends at another node");
        return stack_.back();
    }

private:
    const Nodes& nodes_;
    std::vector<std::uint32_t> path_;
    std::vector<Frontier> stack_;  // stack_[k]: the world after the first k steps of the last path
};

// A state's visited-set key: its (already finalised) hash with the budgets its path has used
// folded in, so the same world reached with budgets left differently is another state.
std::uint64_t visited_key(std::uint64_t state_hash, std::uint8_t faults, std::uint8_t background) {
    return state_hash ^ (((std::uint64_t{faults} << 8) | background) * 0x9e3779b97f4a7c15ULL);
}

bool all_done(const model::World& w) {
    for (const model::Request& r : w.requests)
        if (r.phase != model::Phase::done) return false;
    return true;
}

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

ExploreReport explore(const Scope& scope, const model::Defenses& defenses, const ExploreOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    double seconds_before = 0;  // spent by the runs a checkpoint continues
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    ExploreReport report;
    const model::World initial = initial_world(scope, defenses);
    const std::uint64_t initial_hash = model::state_hash(initial);
    std::vector<std::uint32_t> labels;  // scratch for canonical_state_hash
    auto state_key = [&](const model::World& w) {
        return options.reduction == Reduction::symmetry ? canonical_state_hash(w, labels) : model::state_hash(w);
    };
    Nodes nodes;
    VisitedTable visited(options.keep_graph);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    const model::StateCodec codec(initial);
    ChunkPool pool;
    Level level;
    Level next;
    std::uint32_t depth = 0;
    std::uint32_t counterexample_node = 0;
    if (options.resume != nullptr) {
        const ExploreCheckpoint& c = *options.resume;
        if (c.scope != scope.name || c.target != options.target || c.keep_graph != options.keep_graph ||
            c.reduction != static_cast<std::uint8_t>(options.reduction) || c.initial_hash != initial_hash)
            throw InputError("", "--resume", "the checkpoint is of another question (scope " + c.scope + ", invariant \"" + c.target +
                                                 "\", reduction " + reduction_name(static_cast<Reduction>(c.reduction)) + (c.keep_graph ? ", liveness" : "") +
                                                 ") or another model version");
        for (std::size_t i = 0; i < c.parents.size(); ++i) nodes.push_back({c.parents[i], c.steps[i]});
        for (std::size_t i = 0; i < c.keys.size(); ++i) visited.insert(c.keys[i], c.keep_graph ? c.key_nodes[i] : 0);
        edges = c.edges;
        depth = c.depth;
        report.transitions = c.transitions;
        report.stuck_states = c.stuck_states;
        report.other_violations = c.other_violations;
        seconds_before = c.seconds;
        PathReplayer replayer(initial, nodes);
        counterexample_node = c.counterexample_node;
        if (counterexample_node != 0) {
            replayer.rebuild(counterexample_node);  // every step of its path enabled, or an input error
            Counterexample found;
            found.steps = path_to(nodes, counterexample_node);
            const TrailResult replayed = replay_trail(scope, defenses, found.steps);
            if (replayed.violations.empty()) throw InputError("", "--resume", "the checkpoint's counterexample violates nothing when replayed");
            found.violations = replayed.violations;
            found.described = replayed.described;
            report.counterexample = std::move(found);
        }
        // Rebuilding a large frontier takes a while; a stop meanwhile leaves the checkpoint as it was.
        for (Level* to : {&level, &next})
            for (std::uint32_t id : to == &level ? c.level : c.next) {
                if (options.stop != nullptr && options.stop->load()) {
                    report.bound_hit = "interrupted";
                    report.depth = depth;
                    report.states = nodes.size();
                    report.seconds = seconds_before;
                    report.states_per_s = static_cast<double>(report.states) / std::max(report.seconds, 1e-9);
                    report.checkpoint = c;
                    return report;
                }
                const Frontier& f = replayer.rebuild(id);
                to->add(pool, codec, f.world, f.node, f.faults, f.background);
            }
    } else {
        nodes.push_back({0, {}});
        visited.insert(visited_key(state_key(initial), 0, 0), 0);
        level.add(pool, codec, initial, 0, 0, 0);
    }
    auto finish_timing = [&] {
        report.states = nodes.size();
        report.seconds = seconds_before + elapsed();
        report.states_per_s = static_cast<double>(report.states) / std::max(report.seconds, 1e-9);
    };
    // What a stop leaves: the rest of this level and the next level found so far.
    auto save_checkpoint = [&](std::size_t expanded) {
        ExploreCheckpoint c;
        c.scope = scope.name;
        c.target = options.target;
        c.keep_graph = options.keep_graph;
        c.reduction = static_cast<std::uint8_t>(options.reduction);
        c.initial_hash = initial_hash;
        for (const Node& n : nodes) {
            c.parents.push_back(n.parent);
            c.steps.push_back(n.step);
        }
        visited.for_each([&](std::uint64_t key, std::uint32_t node) {
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
    const std::uint32_t fault_kinds = all_fault_kinds();  // the budgets' kinds, as bits
    const std::uint32_t background = background_kinds();
    auto build = [&](const Level::Entry& f, Batch& b) {
        b.node = f.node;
        if (b.children.empty()) b.children.push_back({initial, {}, 0, 0, 0});
        codec.decode(f.state, b.children[0].world);  // the state itself until its first step is applied
        model::enabled_steps(b.children[0].world, allowed_kinds(scope, f.faults, f.background), b.steps);
        b.stuck = b.steps.empty() && !all_done(b.children[0].world);
        while (b.children.size() < b.steps.size()) b.children.push_back({initial, {}, 0, 0, 0});
        for (std::size_t k = 0; k < b.steps.size(); ++k) {
            Child& c = b.children[k];
            if (k > 0) codec.decode(f.state, c.world);
            c.outcome = model::apply_offered(c.world, b.steps[k]);
            const std::uint32_t kind = model::kind_bit(b.steps[k].kind);
            c.faults = static_cast<std::uint8_t>(f.faults + ((kind & fault_kinds) != 0 ? 1 : 0));
            c.background = static_cast<std::uint8_t>(f.background + ((kind & background) != 0 ? 1 : 0));
            c.key = visited_key(state_key(c.world), c.faults, c.background);
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
            violations.clear();
            model::check_invariants(c.world, c.outcome, true, violations);
            if (!violations.empty() && !violates(violations, options.target)) {
                ++report.other_violations;
                continue;
            }
            if (!violations.empty() && !report.counterexample) {
                Counterexample found;
                found.steps = path_to(nodes, node);
                found.violations = violations;
                found.described = replay_trail(scope, defenses, found.steps).described;
                report.counterexample = std::move(found);
                counterexample_node = node;
                if (options.stop_at_first) return true;
                continue;  // do not expand past a violation
            }
            next.add(pool, codec, c.world, node, c.faults, c.background);
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
            const bool check_clock = (i & 63) == 63 || i + 1 == level.size();  // the clock costs more than a small state
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
