// A stopped exploration (breadth first or depth first), saved so that `kvcheck check --resume` continues it to
// exactly the result an uninterrupted run gives: same states, transitions and counterexample.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/steps.hpp"

namespace kvcheck::sim {

// Every explored state is a node: its parent and the step that reached it. The visited set is
// stored as its keys (and, when the graph is kept, the node of each key). Frontier worlds are not
// stored; they are rebuilt by replaying each node's path.
struct ExploreCheckpoint {
    std::string scope;   // the scope's name, the policy and the target invariant: a
    std::string policy;  // checkpoint resumes only the same question
    std::string target;
    bool keep_graph = false;
    std::uint8_t reduction = 0;      // sim::Reduction
    std::uint8_t order = 0;          // sim::Order
    std::uint64_t initial_hash = 0;  // state hash of the scope's initial world (catches a changed model)
    std::vector<std::uint32_t> parents;
    std::vector<model::Step> steps;
    // Every visited-set key, in the set's order: one per node breadth first; depth first, a node
    // per path that reached a state first or by a shorter path, so there may be more nodes than keys.
    std::vector<std::uint64_t> keys;
    std::vector<std::uint32_t> key_nodes;   // the node of each key; keep_graph only, else empty
    std::vector<std::uint16_t> key_depths;  // the depth each key was last reached at; depth first only
    // Breadth first: the level `level` belongs to. Depth first: the deepest state expanded so far.
    std::uint32_t depth = 0;
    // Breadth first: nodes of that level not expanded yet, in order (never empty). Depth first: the
    // stack of nodes waiting to be expanded, bottom first (never empty).
    std::vector<std::uint32_t> level;
    std::vector<std::uint8_t> level_again;  // depth first: 1 where that stack entry is a state expanded before
    std::vector<std::uint32_t> next;        // breadth first: nodes of the level after it found so far, in order
    std::uint64_t transitions = 0;
    std::uint64_t stuck_states = 0;
    std::uint64_t other_violations = 0;
    std::uint64_t depth_cut_states = 0;     // depth first: states reached at the depth bound so far
    std::uint32_t counterexample_node = 0;  // the first violating node recorded so far, 0 = none
    double seconds = 0;                     // exploration time spent before this checkpoint
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // keep_graph only
};

// A binary file: a magic line, then fixed-width little-endian fields and arrays.
std::string encode_checkpoint(const ExploreCheckpoint& checkpoint);

// Whether `path` is missing or starts as a checkpoint of any kvcheck version does: a file a run
// may replace with its checkpoint, or remove once its question is answered.
bool may_hold_checkpoint(const std::string& path);

// Throws InputError naming `file` when the bytes are not a checkpoint this build wrote.
ExploreCheckpoint decode_checkpoint(const std::string& bytes, const std::string& file);

}  // namespace kvcheck::sim
