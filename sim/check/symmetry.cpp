// Canonical segment naming and the state hash over it. The field list follows model::state_hash;
// tests/checker_test.cpp checks that a renamed world hashes the same.
#include "sim/check/symmetry.hpp"

#include <algorithm>
#include <tuple>

#include "model/core.hpp"

namespace kvcheck::sim {

namespace {

using model::kNone;

struct Accumulator {
    std::uint64_t h = 0x73796d6d65747279ULL;
    void add(std::uint64_t x) {
        h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdULL;
    }
};

// What a live segment is, without its id: slots and disk copies have ids of their own that the
// renaming keeps, so two live segments rarely tie (a tie falls back to id order: still sound,
// only less reduction).
auto identity(const model::World& w, const model::Segment& s) {
    return std::make_tuple(s.key, s.group, s.is_tail, w.start_of(s), s.end, s.slot, s.disk, static_cast<std::uint8_t>(s.stage));
}

}  // namespace

std::uint64_t canonical_state_hash(const model::World& w, std::vector<std::uint32_t>& labels) {
    std::vector<std::uint32_t> live;
    live.reserve(w.live_segments);
    for (std::uint32_t id = 0; id < w.segments.size(); ++id)
        if (w.segments[id].live) live.push_back(id);
    std::sort(live.begin(), live.end(), [&](std::uint32_t x, std::uint32_t y) {
        const auto ix = identity(w, w.segments[x]);
        const auto iy = identity(w, w.segments[y]);
        return ix != iy ? ix < iy : x < y;
    });
    labels.assign(w.segments.size(), kNone);
    std::uint32_t next_label = 0;
    for (std::uint32_t id : live) labels[id] = next_label++;
    // Dead ids that plans, pins, I/O or graphs still name, in the order the hash meets them.
    auto label = [&](std::uint32_t id) -> std::uint64_t {
        if (id == kNone) return kNone;
        KV_ASSERT(id < labels.size(), "a reference past the state table");
        if (labels[id] == kNone) labels[id] = next_label++;
        return labels[id];
    };

    Accumulator a;
    a.add(w.kv_version);
    for (std::uint16_t shift : w.layout_shift) a.add(shift);
    for (std::uint32_t id : live) {
        const model::Segment& s = w.segments[id];
        a.add(s.key ^ labels[id]);
        a.add((std::uint64_t{w.start_of(s)} << 32) | s.end);
        a.add((std::uint64_t{s.kv_version} << 48) | (std::uint64_t{s.data_version()} << 32) |
              (std::uint64_t{s.indexed_version()} << 16) | s.graph_refs);
        a.add((std::uint64_t{s.slot} << 32) | s.disk);
        a.add((std::uint64_t{s.pins} << 48) | (std::uint64_t{s.layout_id} << 32) | (std::uint64_t{s.group} << 24) |
              (std::uint64_t{static_cast<std::uint8_t>(s.stage)} << 16) | (std::uint64_t{s.published} << 3) |
              (std::uint64_t{s.whole} << 2) | (std::uint64_t{s.is_tail} << 1));
        a.add(w.anchor_of(s));
    }
    for (std::uint32_t head : w.lru_head) {
        for (std::uint32_t id = head; id != kNone; id = w.segments[id].lru_next) a.add(label(id));
        a.add(kNone);
    }
    for (const model::Slot& s : w.slots) {
        a.add(s.content ^ s.address);
        a.add((label(s.owner) << 8) | s.label);
    }
    for (const auto& list : w.free_slots) {
        for (std::uint32_t id : list) a.add(id);
        a.add(kNone);
    }
    for (std::uint32_t id : w.shared_free_slots) a.add(id);
    for (const model::DiskObject& d : w.disk) a.add(d.content ^ (label(d.owner) << 32));
    for (const model::IoOp& op : w.io)
        if (op.live) {
            // Two words, here and for plan entries: a kNone request or slot, shifted, would spill
            // into the segment's bits and merge segments 2k and 2k+1.
            a.add(label(op.segment));
            a.add((std::uint64_t{op.request} << 1) | static_cast<std::uint8_t>(op.kind));
        }
    for (const model::Request& r : w.requests) {
        a.add((std::uint64_t{static_cast<std::uint8_t>(r.phase)} << 56) | (std::uint64_t{r.pos} << 24) | r.resume_len);
        a.add((std::uint64_t{r.pending_loads} << 16) | (std::uint64_t{r.lookups} << 8) | (std::uint64_t{r.load_failed} << 4) |
              (std::uint64_t{r.uncached} << 3));
        a.add(r.config_epoch_at_lookup == w.config_epoch);
        for (const model::PlanEntry& p : r.plan) {
            const bool fresh = p.segment != kNone && w.segments[p.segment].epoch == p.epoch;
            a.add(label(p.segment));
            a.add((std::uint64_t{p.slot} << 1) | (fresh ? 1 : 0));
        }
        for (std::uint32_t id : r.pinned) a.add(label(id));
        for (std::uint32_t id : r.owned) a.add(label(id) ^ 0x77ULL);
    }
    for (const model::Graph& g : w.graphs) {
        if (!g.live) continue;
        for (const model::GraphRef& ref : g.refs) a.add(ref.address ^ (label(ref.segment) << 40));
        a.add(kNone);
    }
    return kvcheck::mix64(a.h);
}

}  // namespace kvcheck::sim
