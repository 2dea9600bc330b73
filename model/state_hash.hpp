// The state hash over a World, shared by model::state_hash and the symmetry reduction
// (sim/check/symmetry.cpp): both hash the same fields in the same order and differ only in the
// order live segments are visited and in the names segment ids are hashed under.
#pragma once

#include <bit>
#include <cstdint>

#include "model/core.hpp"
#include "model/world.hpp"

namespace kvcheck::model {

namespace detail {

// A fast word accumulator: four chains take the words in turn (word i goes to chain i mod 4, in
// order), so four multiplies are in flight instead of one; the chains are mixed together once
// at the end. A chain step is xor, multiply, rotate: the rotation carries high bits down, so a
// difference in one word cannot be cancelled by the same bit in a later word. The chain
// rotation below is register renaming once inlined.
struct HashAccumulator {
    std::uint64_t l0 = 0x6b76636865636bULL, l1 = 0x9e3779b97f4a7c15ULL, l2 = 0xbf58476d1ce4e5b9ULL,
                  l3 = 0x94d049bb133111ebULL;
    void add(std::uint64_t x) {
        const std::uint64_t h = std::rotl((l0 ^ x) * 0xff51afd7ed558ccdULL, 29);
        l0 = l1;
        l1 = l2;
        l2 = l3;
        l3 = h;
    }
    // Each chain under its own odd multiplier, then one finaliser: the four multiplies run
    // side by side instead of four finalisers in a row.
    std::uint64_t finish() const {
        return mix64((l0 * 0x9e3779b97f4a7c15ULL) ^ (l1 * 0xc2b2ae3d27d4eb4fULL) ^ (l2 * 0x165667b19e3779f9ULL) ^ l3);
    }
};

}  // namespace detail

// `for_each_live(visit)` calls visit(id) for every live segment, in the order to hash them;
// `label(id)` is the name a segment id is hashed under (kNone must stay kNone). Values that are
// not segment ids (slots, disk copies, requests, addresses) are hashed as they are.
template <typename ForEachLive, typename Label>
std::uint64_t hash_state(const World& w, ForEachLive&& for_each_live, Label&& label) {
    detail::HashAccumulator a;
    a.add(w.kv_version);
    for (std::uint16_t shift : w.layout_shift) a.add(shift);
    for_each_live([&](std::uint32_t id) {
        const Segment& s = w.segments[id];
        a.add(s.key ^ label(id));
        // A segment's start and anchor are functions of its end, unit count, group, form and
        // tail flag (World::start_of, World::anchor_of), so hashing those covers them.
        // The writer steers rollout reuse and the SWA release; it is hashed by request uid, as
        // writers entries are numbered in the order requests arrive.
        a.add((std::uint64_t{w.owner_uid(s)} << 32) | s.end);
        a.add((std::uint64_t{s.kv_version} << 48) | (std::uint64_t{s.extra_units} << 40) |
              (std::uint64_t{s.data_version()} << 32) | (std::uint64_t{s.indexed_version()} << 16) | s.graph_refs);
        a.add((std::uint64_t{s.slot} << 32) | s.disk);
        a.add((std::uint64_t{s.pins} << 48) | (std::uint64_t{s.layout_id} << 32) | (std::uint64_t{s.group} << 24) |
              (std::uint64_t{static_cast<std::uint8_t>(s.stage)} << 16) |
              (std::uint64_t{static_cast<std::uint8_t>(s.form)} << 8) | (std::uint64_t{s.published} << 3) |
              (std::uint64_t{s.whole} << 2) | (std::uint64_t{s.is_tail} << 1) | std::uint64_t{s.shed});
    });
    for (std::uint32_t head : w.lru_head) {  // LRU order decides future evictions
        for (std::uint32_t id = head; id != kNone; id = w.segments[id].lru_next) a.add(label(id));
        a.add(kNone);
    }
    if (w.limits.tier_eviction) {  // and which on-disk entries a full tier drops first
        for (std::uint32_t id = w.disk_lru_head; id != kNone; id = w.segments[id].lru_next) a.add(label(id));
        a.add(kNone);
    }
    for (const Slot& s : w.slots) {
        a.add(s.content ^ s.address);
        a.add((label(s.owner) << 8) | s.label);
    }
    for (const auto& list : w.free_slots) {
        for (std::uint32_t id : list) a.add(id);
        a.add(kNone);
    }
    for (std::uint32_t id : w.shared_free_slots) a.add(id);
    for (const DiskObject& d : w.disk) a.add(d.content ^ (label(d.owner) << 32) ^ (std::uint64_t{d.on_host} << 31));
    if (w.limits.host_capacity_bytes > 0) {  // which copies move to disk first
        for (std::uint32_t id = w.host_head; id != kNone; id = w.disk[id].host_next) a.add(label(w.disk[id].owner));
        a.add(kNone);
    }
    for (const IoOp& op : w.io)
        if (op.live) {
            // Two words: a kNone request, shifted, would spill into the segment's bits and merge
            // segments 2k and 2k+1.
            a.add(label(op.segment));
            a.add((std::uint64_t{op.request} << 1) | static_cast<std::uint8_t>(op.kind));
        }
    for (const Request& r : w.requests) {
        a.add((std::uint64_t{static_cast<std::uint8_t>(r.phase)} << 56) | (std::uint64_t{r.pos} << 24) | r.resume_len);
        // The verdict and hash-hit length are reports, not state: they never steer a later step.
        a.add((std::uint64_t{r.pending_loads} << 16) | (std::uint64_t{r.lookups} << 8) |
              (std::uint64_t{r.gave_up_waiting} << 5) | (std::uint64_t{r.load_failed} << 4) |
              (std::uint64_t{r.uncached} << 3) | (r.config_epoch_at_lookup == w.config_epoch ? 1 : 0));
        for (const PlanEntry& p : r.plan) {
            const bool fresh = p.segment != kNone && w.segments[p.segment].epoch == p.epoch;
            // One word: the slot (kNone included) and the fresh bit fill the low 33 bits and the
            // segment's name the 31 above, which keep every id below 2^31 - 1 apart from kNone.
            a.add((label(p.segment) << 33) | (std::uint64_t{p.slot} << 1) | (fresh ? 1 : 0));
        }
        for (std::uint32_t id : r.pinned) a.add(label(id));
        for (std::uint32_t id : r.owned) a.add(label(id) ^ 0x77ULL);
    }
    for (const Graph& g : w.graphs) {
        if (!g.live) continue;
        for (const GraphRef& ref : g.refs) a.add(ref.address ^ (label(ref.segment) << 40));
        a.add(kNone);
    }
    return a.finish();
}

}  // namespace kvcheck::model
