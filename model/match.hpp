// Match and validate: turns a request's prefix into one of four verdicts with per-form reasons,
// applying the four validation layers (VL1-VL4) and each form's resumability condition.
#pragma once

#include <cstdint>
#include <vector>

#include "model/scratch.hpp"
#include "model/world.hpp"

namespace kvcheck::model {

struct LookupResult {
    VerdictKind verdict = VerdictKind::full_recompute;
    std::uint32_t hash_hit_len = 0;    // what a plain hash lookup on the primary group reports
    std::uint32_t resume_len = 0;      // tokens that will be read from cache (after loads, for io_wait)
    std::uint32_t recompute_from = 0;  // first token recomputed
    std::vector<Miss> misses;          // why the usable length is below the hash hit, per group and form
    std::vector<PlanEntry> plan;       // what to read at resume_len
    std::vector<std::uint32_t> loads;  // segments to bring back before the read (io_wait)
};

// Pure: reads the world, changes nothing; works in `scratch`'s buffers.
LookupResult lookup(const World& world, const Request& request, Scratch& scratch);

// The lengths a resume can stop at under the policy in force: the LCM grain; the smallest block
// for a policy that ignores it; the primary group's block for the plain hash-hit rule.
std::uint32_t resume_grain(const World& world);
// The same for a config and policy (what World's constructor keeps as World::grain_tokens).
std::uint32_t resume_grain_of(const ModelConfig& config, const Derived& derived, const Defenses& defenses);

// Whether some resume can read the SWA block of `group` ending at `end`: a resume at L reads the
// window blocks from (L - W) / B * B up to L, and L stops only on the resume grain.
bool window_block_resumable(const World& world, const CacheGroup& group, std::uint32_t end);

// The index of the first full group: the group whose hashes a plain prefix lookup consults.
std::uint8_t primary_group(const World& world);

// How many of SWA group g's blocks ending in (from, to] some resume can read (window_block_resumable),
// without visiting them one by one when the grain points lie on the block grid.
std::uint32_t resumable_blocks(const World& world, std::uint8_t g, std::uint32_t from, std::uint32_t to);

// How many units of an SWA entry some resume can read (window_block_resumable): what an entry
// keeps once it is shed.
std::uint32_t retained_units(const World& world, const Segment& seg);

// Whether every unit of [start, end) of entry seg can be read: false when a shed SWA entry has
// let go of a block in it.
bool units_retained(const World& world, const Segment& seg, std::uint32_t start, std::uint32_t end);

}  // namespace kvcheck::model
