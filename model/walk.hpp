// Walks over the entries of a group that cover a reader's prefix. With extents (docs/invariants.md,
// "Extents") one published entry holds several units of one writer's content, so the entry that
// covers a unit is not the index lookup of that unit's prefix: it is found by walking from the
// unit's chunk start along the entries that hold the reader's content. match.cpp walks with the
// index answers it caches per lookup; the steps and invariants walk afresh.
#pragma once

#include <cstdint>
#include <vector>

#include "model/preset.hpp"
#include "model/world.hpp"

namespace kvcheck::model {

// An entry of group g (not a tail) and the end of what it covers of a reader.
struct Hit {
    std::uint32_t id = kNone;
    std::uint32_t until = 0;
    bool covers(std::uint32_t x) const { return id != kNone && until > x; }
};

// The last unit end (tokens) through which `reader`'s content equals the writer's over entry e,
// counting from e's first unit; e's start when not even that unit matches. Inside both prompts
// equal keys at a length mean equal content before it (the keys chain the content blocks), so
// the last matching unit there is found by bisection; past either prompt, unit by unit.
std::uint32_t matched_end(const World& w, const RequestSpec& reader, const Segment& e);

// The entry whose first unit starts at `start`, for reader `spec`, looked up afresh.
Hit starting_afresh(const World& w, const RequestSpec& spec, std::uint8_t g, std::uint32_t start);

// The entries covering a range are found by walking it: at each entry's end the entry that
// starts there (next_at), or the one starting on the step grid (World::extent_step) just before
// it, which a writer starts where an older entry's cover ended off the grid (write_range). The
// entry covering a unit no walk has reached yet (covering) is where such a walk from the unit's
// chunk start arrives, stepping over a gap one grid point at a time (an extent starts on the
// grid or at its chunk's start): an entry that starts inside one the walk is in is not its
// way on. `starting(g, s)` answers for one start, cached or afresh.
template <typename Starting>
Hit next_at(const World& w, std::uint8_t g, std::uint32_t y, Starting&& starting) {
    const Hit hit = starting(g, y);
    if (hit.covers(y) || w.extent_units[g] == 1) return hit;
    const std::uint32_t below = y / w.extent_step[g] * w.extent_step[g];
    if (below == y) return {};
    const Hit before = starting(g, below);
    return before.covers(y) ? before : Hit{};
}

template <typename Starting>
Hit covering(const World& w, std::uint8_t g, std::uint32_t x, Starting&& starting) {
    if (w.extent_units[g] == 1) return starting(g, x);
    const std::uint32_t step = w.extent_step[g];
    std::uint32_t at = w.chunk_start(g, primary_form(w.group(g)), x);
    for (Hit hit = starting(g, at);;) {
        if (hit.covers(x)) return hit;
        if (hit.id != kNone && hit.until > at) {
            at = hit.until;
            hit = next_at(w, g, at, starting);
            if (hit.id != kNone) continue;
        }
        at = at / step * step + step;  // a gap: the next grid point
        if (at > x) return {};
        hit = starting(g, at);
    }
}

// The published entry of group g (not a tail) that covers the unit of `spec`'s prefix ending at
// `end` tokens, or kNone: among the entries that may start in that unit's chunk at or before it
// and whose writer's content equals spec's from their start through `end`, the one that starts
// last. With one unit per entry this is the index lookup of that prefix.
std::uint32_t covering_entry(const World& world, const RequestSpec& spec, std::uint8_t g, std::uint32_t end);

// Whether a reader of spec's content could use entry id at all: whole, not being written or
// evicted, under the current weights and layout, at an aligned address, and for indexer state
// built over the KV version the prefix index publishes for it. What fails this stays useless.
bool sound_entry(const World& world, const RequestSpec& spec, std::uint32_t id);

// How far from `from` (a unit boundary) sound published entries of group g that hold spec's
// content cover its prefix without a gap, up to `to`; `from` when none does. Writers of extents
// leave what is covered unpublished (write_range). `before`, when known, is the live entry
// covering spec's unit that ends at `from`; `spoiled` gets the unsound entries the walk meets on
// to `to`, which the writer's fresh entries take the place of.
std::uint32_t covered_until(const World& world, const RequestSpec& spec, std::uint8_t g, std::uint32_t from,
                            std::uint32_t to, std::uint32_t before = kNone,
                            std::vector<std::uint32_t>* spoiled = nullptr);

}  // namespace kvcheck::model
