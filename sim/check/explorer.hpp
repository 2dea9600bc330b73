// `kvcheck check`: exhaustive exploration of every interleaving at a bounded scope, with state
// hashing. Breadth-first (the default) expands no state twice and its first counterexample is a
// shortest one; depth-first holds only the states along the paths it is on, so it needs far less
// memory for the frontier and reaches deep states early, and its counterexamples are shrunk.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sim/check/checkpoint.hpp"
#include "sim/check/trail.hpp"

namespace kvcheck::sim {

// How the explorer tells states apart. `symmetry` merges worlds that differ only by a renaming of
// segment ids (sim/check/symmetry.hpp); `none` keeps model::state_hash as it is.
enum class Reduction : std::uint8_t { none, symmetry };
const char* reduction_name(Reduction reduction);
std::optional<Reduction> reduction_from_name(const std::string& name);

// The search order: `bfs` (breadth first) or `dfs` (depth first).
enum class Order : std::uint8_t { breadth_first, depth_first };
const char* order_name(Order order);
std::optional<Order> order_from_name(const std::string& name);

struct ExploreOptions {
    std::uint64_t max_states = 20'000'000;
    double max_seconds = 600;
    bool stop_at_first = true;
    bool keep_graph = false;  // store edges for the strongly-connected-component liveness analysis
    std::string target;       // record only counterexamples violating this invariant ("" = any)
    Reduction reduction = Reduction::none;
    Order order = Order::breadth_first;  // depth_first does not keep the graph (keep_graph must be false)
    std::function<void(std::uint64_t states, std::uint32_t depth, double seconds)> progress;
    const std::atomic<bool>* stop = nullptr;  // set (e.g. by Ctrl-C): stop, keeping what was found
    // Continue a stopped run (same scope, policy, target, order, reduction and keep_graph). Bounds apply afresh:
    // max_seconds to this run, max_states to the states of all runs together.
    const ExploreCheckpoint* resume = nullptr;
};

struct ExploreReport {
    std::uint64_t states = 0;
    std::uint64_t transitions = 0;
    std::uint32_t depth = 0;  // deepest level expanded
    double seconds = 0;
    double states_per_s = 0;
    bool exhausted = false;              // every reachable state within the scope was expanded
    std::string bound_hit;               // "", "max_states", "max_seconds", "max_depth" or "interrupted"
    std::uint64_t depth_cut_states = 0;  // states left unexpanded at the depth bound (depth-first: reached
                                         // there, some of them expanded later from a shorter path)
    std::optional<Counterexample> counterexample;
    // Set when a warm request broke an invariant warming up (WarmUpViolation): the counterexample
    // is its own steps, which replay from this scope (that request cold), not from the one explored.
    std::optional<Scope> counterexample_scope;
    std::uint64_t other_violations = 0;  // violating states not matching `target` (not expanded)
    std::uint64_t stuck_states = 0;      // terminal states with an unfinished request (LV1_progress)
    std::uint64_t nontrivial_sccs = 0;   // cycles in the explored graph (keep_graph only)
    // Set when interrupted, or stopped by max_states or max_seconds with work left: resuming from
    // it (its `policy` is left for the caller to fill) gives the result of an uninterrupted run.
    std::optional<ExploreCheckpoint> checkpoint;
};

ExploreReport explore(const Scope& scope, const model::Defenses& defenses, const ExploreOptions& options);

}  // namespace kvcheck::sim
