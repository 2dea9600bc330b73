// Canonical segment naming and the state hash over it (model::hash_state, as model::state_hash);
// tests/checker_test.cpp checks that a renamed world hashes the same.
#include "sim/check/symmetry.hpp"

#include <algorithm>
#include <tuple>

#include "model/core.hpp"
#include "model/state_hash.hpp"

namespace kvcheck::sim {

namespace {

using model::kNone;

// What a live segment is, without its id: slots and disk copies have ids of their own that the
// renaming keeps, so two live segments rarely tie (a tie falls back to id order: still sound,
// only less reduction).
auto identity(const model::World& w, const model::Segment& s) {
    return std::make_tuple(s.key, s.group, s.is_tail, w.start_of(s), s.end, s.slot, s.disk,
                           static_cast<std::uint8_t>(s.stage));
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

    const auto canonical_order = [&live](auto&& visit) {
        for (std::uint32_t id : live) visit(id);
    };
    return model::hash_state(w, canonical_order, label);
}

}  // namespace kvcheck::sim
