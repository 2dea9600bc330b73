// Where a resume may stop and which SWA blocks some resume can still read: the grain rule
// (VL1's LCM boundary, or what a broken policy uses instead) and the window retention that follows
// from it. The matcher (match.cpp), the steps that shed SWA entries and the invariants share them.
#include <algorithm>

#include "model/core.hpp"
#include "model/match.hpp"

namespace kvcheck::model {

std::uint8_t primary_group(const World& world) {
    for (std::size_t g = 0; g < world.config->groups.size(); ++g)
        if (world.config->groups[g].kind == GroupKind::full) return static_cast<std::uint8_t>(g);
    KV_UNREACHABLE("config_problem() guarantees a full group");
}

std::uint32_t resume_grain_of(const ModelConfig& config, const Derived& derived, const Defenses& d) {
    if (d.hash_hit_is_enough) {
        for (const CacheGroup& g : config.groups)
            if (g.kind == GroupKind::full) return g.block_tokens;
        KV_UNREACHABLE("config_problem() guarantees a full group");
    }
    return d.lcm_boundary ? derived.lcm_tokens : derived.min_block_tokens;
}

std::uint32_t resume_grain(const World& world) { return world.grain_tokens; }

bool window_block_resumable(const World& world, const CacheGroup& group, std::uint32_t end) {
    // The first grain point at or after `end` is the resume most likely to read the block; a
    // later one's window starts later still. (A window longer than that point starts at 0.)
    const std::uint32_t grain = resume_grain(world);
    const std::uint64_t first = (std::uint64_t{end} + grain - 1) / grain * grain;
    return first < group.window_tokens || (first - group.window_tokens) / group.block_tokens * group.block_tokens < end;
}

std::uint32_t resumable_blocks(const World& world, std::uint8_t g, std::uint32_t from, std::uint32_t to) {
    const CacheGroup& group = world.group(g);
    const World::WindowPeriods& shape = world.window_periods[g];
    if (!shape.on_grid) {
        std::uint32_t count = 0;
        for (std::uint32_t e = from + group.block_tokens; e <= to; e += group.block_tokens)
            if (window_block_resumable(world, group, e)) ++count;
        return count;
    }
    // With grain points G on the block grid, the block ending at e (first grain point G >= e) is
    // readable iff G < W or e > G - K, K the window rounded up to blocks: per grain period, all
    // of its blocks while G < W, else the last min(K, grain) / block of them (World's constructor
    // keeps that count and the number of early periods per group).
    const std::uint32_t grain = resume_grain(world);
    const std::uint64_t early = shape.early;
    const std::uint64_t kept_blocks = shape.kept_blocks;
    if (from % grain == 0 && to % grain == 0 && from >= early * grain)  // whole periods past the early ones
        return static_cast<std::uint32_t>((to - from) / grain * kept_blocks);
    const std::uint64_t block = group.block_tokens;
    const std::uint64_t window = group.window_tokens;
    const std::uint64_t kept = kept_blocks * block;
    const auto upto = [&](std::uint64_t x) {  // readable block ends in (0, x]
        const std::uint64_t periods = x / grain;
        std::uint64_t n =
            std::min(periods, early) * (grain / block) + (periods > early ? periods - early : 0) * kept_blocks;
        const std::uint64_t base = periods * grain;
        const std::uint64_t next = base + grain;
        const std::uint64_t low = next < window ? base : std::max(base, next - kept);
        return n + (x > low ? (x - low) / block : 0);
    };
    return static_cast<std::uint32_t>(upto(to) - upto(from));
}

std::uint32_t retained_units(const World& world, const Segment& seg) {
    return resumable_blocks(world, seg.group, world.start_of(seg), seg.end);
}

bool units_retained(const World& world, const Segment& seg, std::uint32_t start, std::uint32_t end) {
    if (!seg.shed) return true;
    return resumable_blocks(world, seg.group, start, end) == (end - start) / world.group(seg.group).block_tokens;
}

}  // namespace kvcheck::model
