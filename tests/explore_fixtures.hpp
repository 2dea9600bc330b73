// What the explorer tests of both search orders share: a run cut into pieces by state bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/policy.hpp"
#include "sim/check/explorer.hpp"

namespace {

// Runs `scope` under `policy` with `base`'s options to the end, stopping at each state bound in
// turn and resuming from the checkpoint each stop wrote (round-tripped through its binary encoding).
inline kvcheck::sim::ExploreReport explore_in_pieces(const kvcheck::sim::Scope& scope, const std::string& policy,
                                                     const kvcheck::sim::ExploreOptions& base,
                                                     const std::vector<std::uint64_t>& state_bounds) {
    namespace sim = kvcheck::sim;
    std::optional<sim::ExploreCheckpoint> checkpoint;
    for (std::size_t piece = 0;; ++piece) {
        sim::ExploreOptions options = base;
        options.max_states = piece < state_bounds.size() ? state_bounds[piece] : base.max_states;
        options.resume = checkpoint ? &*checkpoint : nullptr;
        sim::ExploreReport r = sim::explore(scope, kvcheck::model::find_policy(policy)->defenses, options);
        if (!r.checkpoint) return r;
        EXPECT_LT(piece, state_bounds.size()) << "a run without a bound left a checkpoint";
        EXPECT_EQ(r.bound_hit, "max_states");
        r.checkpoint->policy = policy;
        checkpoint = sim::decode_checkpoint(sim::encode_checkpoint(*r.checkpoint), "memory");
    }
}

}  // namespace
