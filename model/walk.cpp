// The entry walks of walk.hpp: how far an entry holds a reader's content, and the afresh walks
// the steps and invariants use.
#include "model/walk.hpp"

#include <algorithm>

namespace kvcheck::model {

std::uint32_t matched_end(const World& w, const RequestSpec& reader, const Segment& e) {
    const RequestSpec& writer = w.writer_spec(e);
    if (&writer == &reader) return e.end;
    const std::uint32_t unit = w.unit_tokens(e.group, e.form);
    std::uint32_t matched = w.start_of(e);
    const std::uint32_t prompts = std::min(reader.input_tokens, writer.input_tokens) / unit * unit;
    std::uint32_t mismatch = std::min(e.end, prompts);  // a unit end that does not match, once bisecting
    // Inside both prompts a prefix's key is its last content block's chain hash and its length,
    // so the chains can be compared without hashing (not so for a session's turn, whose prompt
    // opens with an earlier turn's keys).
    const std::uint32_t block = reader.content_block_tokens;
    const bool chains = block == writer.content_block_tokens && !reader.prior && !writer.prior;
    const auto same = [&](std::uint32_t t) {
        return chains ? reader.chain[(t - 1) / block] == writer.chain[(t - 1) / block] : reader.key(t) == writer.key(t);
    };
    if (mismatch > matched) {
        if (same(mismatch)) {
            matched = mismatch;
        } else {
            while (mismatch - matched > unit) {
                const std::uint32_t mid = matched + (mismatch - matched) / unit / 2 * unit;
                (same(mid) ? matched : mismatch) = mid;
            }
            return matched;
        }
    }
    for (std::uint32_t t = matched + unit; t <= e.end && reader.key(t) == writer.key(t); t += unit) matched = t;
    return matched;
}

Hit starting_afresh(const World& w, const RequestSpec& spec, std::uint8_t g, std::uint32_t start) {
    const std::uint32_t end = start + w.unit_tokens(g, primary_form(w.group(g)));
    const std::uint32_t id = w.find(spec.key(end), g, false, w.index_scope(spec));
    if (id == kNone) return {};
    return {id, w.segments[id].units() == 1 ? end : matched_end(w, spec, w.segments[id])};
}

std::uint32_t covering_entry(const World& world, const RequestSpec& spec, std::uint8_t g, std::uint32_t end) {
    const std::uint32_t unit = world.unit_tokens(g, primary_form(world.group(g)));
    const auto afresh = [&](std::uint8_t group, std::uint32_t s) { return starting_afresh(world, spec, group, s); };
    const Hit hit = covering(world, g, end - unit, afresh);
    return hit.until >= end ? hit.id : kNone;
}

bool sound_entry(const World& world, const RequestSpec& spec, std::uint32_t id) {
    const Segment& s = world.segments[id];
    if (!s.whole || s.stage == Stage::writing || s.stage == Stage::evicting || s.kv_version != world.kv_version ||
        s.layout_id != world.current_layout(s.group))
        return false;
    if (s.slot != kNone && world.slots[s.slot].address % kAlignBytes != 0) return false;
    if (s.form != Form::indexer_state) return true;
    const auto kv_group = static_cast<std::uint8_t>(world.group(s.group).indexed_group);
    const std::uint32_t kv =
        covering_entry(world, spec, kv_group, world.start_of(s) + world.group(s.group).block_tokens);
    return kv != kNone && world.segments[kv].data_version() == s.indexed_version();
}

std::uint32_t covered_until(const World& world, const RequestSpec& spec, std::uint8_t g, std::uint32_t from,
                            std::uint32_t to, std::uint32_t before, std::vector<std::uint32_t>* spoiled) {
    const auto afresh = [&](std::uint8_t group, std::uint32_t s) { return starting_afresh(world, spec, group, s); };
    // The walk to `from` is known when the entry before it is: it goes on in that entry or after it.
    Hit hit = before == kNone ? covering(world, g, from, afresh)
                              : Hit{before, matched_end(world, spec, world.segments[before])};
    if (before != kNone && !hit.covers(from)) hit = next_at(world, g, from, afresh);
    std::uint32_t covered = from;
    bool sound = true;  // every entry so far is one a reader can use
    for (std::uint32_t x = from; x < to && hit.covers(x); hit = next_at(world, g, x, afresh)) {
        if (!sound_entry(world, spec, hit.id)) {
            sound = false;
            if (spoiled != nullptr) spoiled->push_back(hit.id);
        }
        x = std::min(to, hit.until);
        if (sound) covered = x;
    }
    return covered;
}

}  // namespace kvcheck::model
