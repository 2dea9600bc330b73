// The explorer's parts that its breadth-first and depth-first searches share: the visited set, the
// node tree counterexamples are read from, and the rebuilding of frontier worlds from a checkpoint.
// Internal to sim/check/explorer*.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <new>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include "model/core.hpp"
#include "model/snapshot.hpp"
#include "sim/check/exploration.hpp"
#include "sim/check/explorer.hpp"
#include "sim/io/input_error.hpp"

namespace kvcheck::sim::detail {

// Open-addressing set of 64-bit state hashes, mapping each to its node index when asked to keep
// nodes (the explored graph's edges need the node a repeated state is; nothing else does, and
// without them an insert touches one cache line instead of two), and to the depth it was last
// reached at when asked to keep depths (depth-first search). The arrays are mapped directly:
// fresh mappings are already zero, and they ask for 2 MiB pages, since every probe lands on a
// random page of a table far larger than what the TLB covers in 4 KiB pages (docs/checker.md).
class VisitedTable {
public:
    VisitedTable(bool keep_nodes, bool keep_depths) : keep_nodes_(keep_nodes), keep_depths_(keep_depths) {
        allocate(kInitialCells);
    }
    ~VisitedTable() { release(keys_, nodes_, depths_, cells_); }
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
        const std::size_t i = probe(hash);
        if (keys_[i] != 0) return {keep_nodes_ ? nodes_[i] : node, false};
        fill(i, hash, node, 0);
        return {node, true};
    }

    // Depth-first search with a depth bound stays complete only if a state first reached deep is
    // expanded again when a shorter path reaches it (it may have been cut at the bound, or its
    // successors cut): `shallower` says so, and the key then records the smaller depth.
    enum class Visit : std::uint8_t { fresh, shallower, known };
    Visit insert_at_depth(std::uint64_t hash, std::uint32_t depth) {
        const auto d = static_cast<std::uint16_t>(std::min<std::uint32_t>(depth, UINT16_MAX));
        const std::size_t i = probe(hash);
        if (keys_[i] == 0) {
            fill(i, hash, 0, d);
            return Visit::fresh;
        }
        if (depths_[i] <= d) return Visit::known;
        depths_[i] = d;
        return Visit::shallower;
    }
    // A state never to expand (a violation): no path is shorter than depth 0.
    void keep_out(std::uint64_t hash) { depths_[probe(hash)] = 0; }

    std::size_t size() const { return size_; }

    // Calls visit(key, node, depth) for every key in the table, in cell order; node and depth are
    // 0 unless kept.
    template <typename Visitor>
    void for_each(Visitor&& visit) const {
        for (std::size_t i = 0; i < cells_; ++i)
            if (keys_[i] != 0)
                visit(keys_[i], keep_nodes_ ? nodes_[i] : 0u, keep_depths_ ? depths_[i] : std::uint16_t{0});
    }
    // Puts back a key for_each gave (resuming a checkpoint).
    void restore(std::uint64_t hash, std::uint32_t node, std::uint16_t depth) {
        const std::size_t i = probe(hash);
        fill(i, hash, node, depth);
    }

private:
    static constexpr std::size_t kInitialCells = std::size_t{1} << 16;

    // The cell that holds `hash`, or the empty cell where it belongs (grown first if need be).
    std::size_t probe(std::uint64_t& hash) {
        if (hash == 0) hash = 1;  // 0 marks an empty cell
        if ((size_ + 1) * 2 > cells_) grow();
        std::size_t i = hash & (cells_ - 1);
        while (keys_[i] != 0 && keys_[i] != hash) i = (i + 1) & (cells_ - 1);
        return i;
    }
    void fill(std::size_t i, std::uint64_t hash, std::uint32_t node, std::uint16_t depth) {
        keys_[i] = hash;
        if (keep_nodes_) nodes_[i] = node;
        if (keep_depths_) depths_[i] = depth;
        ++size_;
    }
    void allocate(std::size_t cells) {
        cells_ = cells;
        keys_ = static_cast<std::uint64_t*>(map(cells * sizeof(std::uint64_t)));
        nodes_ = keep_nodes_ ? static_cast<std::uint32_t*>(map(cells * sizeof(std::uint32_t))) : nullptr;
        depths_ = keep_depths_ ? static_cast<std::uint16_t*>(map(cells * sizeof(std::uint16_t))) : nullptr;
    }
    static void* map(std::size_t bytes) {
        void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) throw std::bad_alloc();
        madvise(m, bytes, MADV_HUGEPAGE);  // a hint: refused, the table works on small pages
        return m;
    }
    static void release(std::uint64_t* keys, std::uint32_t* nodes, std::uint16_t* depths, std::size_t cells) {
        munmap(keys, cells * sizeof(std::uint64_t));
        if (nodes != nullptr) munmap(nodes, cells * sizeof(std::uint32_t));
        if (depths != nullptr) munmap(depths, cells * sizeof(std::uint16_t));
    }
    void grow() {
        std::uint64_t* const old_keys = keys_;
        std::uint32_t* const old_nodes = nodes_;
        std::uint16_t* const old_depths = depths_;
        const std::size_t old_cells = cells_;
        allocate(old_cells * 2);
        size_ = 0;
        for (std::size_t i = 0; i < old_cells; ++i)
            if (old_keys[i] != 0)
                restore(old_keys[i], old_nodes != nullptr ? old_nodes[i] : 0,
                        old_depths != nullptr ? old_depths[i] : 0);
        release(old_keys, old_nodes, old_depths, old_cells);
    }

    bool keep_nodes_;
    bool keep_depths_;
    std::size_t cells_ = 0;
    std::uint64_t* keys_ = nullptr;
    std::uint32_t* nodes_ = nullptr;   // null unless nodes are kept
    std::uint16_t* depths_ = nullptr;  // null unless depths are kept
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
    Spent spent;
};

// A state rebuilt from a checkpoint's path, with its node and the budgets its path has used.
struct Frontier {
    model::World world;
    std::uint32_t node;
    Spent spent;
    std::uint32_t depth;  // steps on its path
};

inline std::vector<model::Step> path_to(const Nodes& nodes, std::uint32_t node) {
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
    PathReplayer(const Exploration& exploration, const model::World& initial, const Nodes& nodes)
        : exploration_(exploration), nodes_(nodes) {
        stack_.push_back({initial, 0, {}, 0});
    }

    const Frontier& rebuild(std::uint32_t node) {
        path_.clear();
        for (std::uint32_t n = node; n != 0; n = nodes_[n].parent) path_.push_back(n);
        std::reverse(path_.begin(), path_.end());
        std::size_t shared = 0;
        while (shared < path_.size() && shared + 1 < stack_.size() && stack_[shared + 1].node == path_[shared])
            ++shared;
        stack_.erase(stack_.begin() + static_cast<std::ptrdiff_t>(shared + 1), stack_.end());
        for (std::size_t k = shared; k < path_.size(); ++k) {
            Frontier f = stack_.back();
            const model::Step& step = nodes_[path_[k]].step;
            // The checkpoint's checksum guards against damage, not against a file made to pass it.
            if (!model::enabled(f.world, step))
                throw InputError("", "--resume",
                                 "the checkpoint's node " + std::to_string(path_[k]) +
                                     " takes a step that is not enabled there");
            model::apply(f.world, step);
            f.node = path_[k];
            f.spent = exploration_.after(f.spent, step);
            ++f.depth;
            stack_.push_back(std::move(f));
        }
        KV_ASSERT(stack_.back().node == node, "the replayed path ends at another node");
        return stack_.back();
    }

private:
    const Exploration& exploration_;
    const Nodes& nodes_;
    std::vector<std::uint32_t> path_;
    std::vector<Frontier> stack_;  // stack_[k]: the world after the first k steps of the last path
};

// A state's visited-set key: its (already finalised) hash with the budgets its path has used
// folded in, so the same world reached with budgets left differently is another state.
inline std::uint64_t visited_key(std::uint64_t state_hash, Spent spent) {
    return state_hash ^ (((std::uint64_t{spent.faults} << 8) | spent.background) * 0x9e3779b97f4a7c15ULL);
}

inline bool all_done(const model::World& w) {
    for (const model::Request& r : w.requests)
        if (r.phase != model::Phase::done) return false;
    return true;
}

// The key a world is told apart by: model::state_hash, or with the symmetry reduction the hash
// of its canonical renaming (`labels` is scratch).
std::uint64_t explored_key(const model::World& w, Reduction reduction, std::vector<std::uint32_t>& labels);

// The counterexample that ends at `node`: its path from the initial world, described. A
// depth-first path is rarely the shortest, so it is shrunk first (sim::shrink).
Counterexample counterexample_at(const Nodes& nodes, std::uint32_t node,
                                 const std::vector<model::Violation>& violations, const Scope& scope,
                                 const model::Defenses& defenses, const ExploreOptions& options);

// What resuming checkpoint `c` does alike in both orders: checks it asks this question (same
// scope, target, search order, liveness, reduction and model; InputError otherwise), takes
// its nodes, its visited keys (with their nodes or depths) and the report's counts so far, and
// replays the counterexample it carries. The frontier is the caller's to rebuild with `replayer`
// (built over `nodes`). Returns the counterexample's node (0: none).
std::uint32_t resume_common(const ExploreCheckpoint& c, const Scope& scope, const model::Defenses& defenses,
                            const ExploreOptions& options, std::uint64_t initial_hash, Nodes& nodes,
                            VisitedTable& visited, PathReplayer& replayer, ExploreReport& report);

// A stop while a resumed checkpoint's frontier is being rebuilt: the report of a run that
// expanded nothing, keeping the checkpoint as it was.
ExploreReport stopped_while_resuming(const ExploreCheckpoint& c);

// The question's part of a checkpoint (scope, target, order, liveness, reduction, model).
ExploreCheckpoint checkpoint_header(const Scope& scope, const ExploreOptions& options, std::uint64_t initial_hash);

ExploreReport explore_depth_first(const Scope& scope, const model::Defenses& defenses, const ExploreOptions& options);

}  // namespace kvcheck::sim::detail
