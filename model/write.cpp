// The write path (write.hpp): one entry a unit, or extents of several units within a chunk
// (docs/invariants.md, "Extents"). The steps call it from allocate (prefill) and decode.
#include "model/write.hpp"

#include <algorithm>
#include <vector>

#include "model/alloc.hpp"
#include "model/core.hpp"
#include "model/match.hpp"
#include "model/walk.hpp"

namespace kvcheck::model {

void hold(World& w, Request& q, std::uint32_t id) {
    pin(w, id);
    q.pinned.push_back(id);
}

namespace {

// The tag a correct write of this segment by this request produces.
std::uint64_t written_content(const World& w, const RequestSpec& spec, const Segment& s) {
    const CacheGroup& grp = w.group(s.group);
    if (grp.kind == GroupKind::linear) return truth_tag(w, spec, s.group, 0, w.anchor_of(s));
    const std::uint64_t base = truth_tag(w, spec, s.group, w.start_of(s), s.end);
    if (s.is_tail) return hash_combine(base, w.anchor_of(s)) | 1;
    if (grp.kind == GroupKind::indexer) return hash_combine(base, s.indexed_version()) | 1;
    return base;
}

// Creates one segment this request writes, pinned by it. False when admission refused it.
bool create_owned(World& w, std::uint32_t r, std::uint8_t g, Form form, std::uint32_t start, std::uint32_t end,
                  std::uint64_t key, std::uint32_t anchor, bool duplicate, StepOutcome& out) {
    Request& q = w.requests[r];
    // The log appends to the outcome's list in place: a log of its own would allocate per entry.
    AdmissionLog log;
    log.evicted.swap(out.evicted);
    const std::uint32_t id = create_segment(w, g, form, start, end, key, q.writer, &log);
    log.evicted.swap(out.evicted);
    if (id == kNone) {
        q.uncached = true;
        out.admission_refused = true;
        return false;
    }
    KV_ASSERT_EQ(w.anchor_of(w.segments[id]), anchor, "a segment's anchor is derived from its end, group and form");
    w.segments[id].duplicate = duplicate;
    q.owned.push_back(id);
    hold(w, q, id);
    out.residency.push_back({Residency::Kind::written, id, kNone, static_cast<std::uint32_t>(out.evicted.size())});
    return true;
}

// Creates the entries of group g for its units ending at first_end, first_end + unit, ... up to
// `last_end`. With one unit per entry, one entry a unit. Extents: one entry per run of units that
// stays within one chunk and on one side of `cut` (so that what the writer still attends to
// after this write is an entry of its own); the units another published entry already holds for
// this content (covered_until, down to the step grid) are duplicates the writer never publishes,
// as an engine that finds a block's hash cached keeps the cached block.
void create_units(World& w, std::uint32_t r, std::uint8_t g, Form form, std::uint32_t first_end, std::uint32_t last_end,
                  std::uint32_t cut, std::uint32_t anchor, StepOutcome& out, Scratch& scratch) {
    Request& q = w.requests[r];
    const std::uint32_t unit = w.unit_tokens(g, form);
    const std::uint32_t first = first_end - unit;
    if (w.extent_units_of(g, form) == 1) {
        for (std::uint32_t e = first_end; e <= last_end && !q.uncached; e += unit)
            create_owned(w, r, g, form, e - unit, e, q.spec->key(e), anchor, false, out);
        return;
    }
    const std::uint32_t step = w.extent_step[g];
    // A decode write holds generated tokens, which no other request's entries hold (they would
    // need this very prompt); a prefill write may start where the plan it read ends.
    std::uint32_t duplicate_end = 0;
    if (first < q.spec->input_tokens) {
        std::uint32_t before = kNone;
        for (const PlanEntry& e : q.plan)
            if (e.group == g && e.end == first && e.segment != kNone && w.segments[e.segment].live &&
                w.segments[e.segment].epoch == e.epoch && !w.segments[e.segment].is_tail)
                before = e.segment;
        std::vector<std::uint32_t>& spoiled = scratch.spoiled;
        spoiled.clear();
        duplicate_end = covered_until(w, *q.spec, g, first, last_end / unit * unit, before, &spoiled) / step * step;
        for (std::uint32_t id : spoiled) unpublish(w, id);  // useless to every reader from now on
    }
    const std::uint32_t cut_end = cut / step * step;  // units ending at or before it lie before the cut
    for (std::uint32_t start = first; start + unit <= last_end && !q.uncached;) {
        std::uint32_t end =
            std::min(w.chunk_start(g, form, start) + w.extent_units_of(g, form) * unit, last_end / unit * unit);
        for (std::uint32_t split : {duplicate_end, cut_end})
            if (start < split && split < end) end = split;
        create_owned(w, r, g, form, start, end, q.spec->key(start + unit), anchor, end <= duplicate_end, out);
        start = end;
    }
}

}  // namespace

void write_range(World& w, std::uint32_t r, std::uint32_t from, std::uint32_t to, StepOutcome& out, Scratch& scratch) {
    Request& q = w.requests[r];
    const RequestSpec& spec = *q.spec;
    for (std::uint8_t g = 0; g < w.config->groups.size() && !q.uncached; ++g) {
        const CacheGroup& grp = w.group(g);
        const std::uint32_t block = grp.block_tokens;
        const std::uint32_t first_end = (from / block + 1) * block;
        switch (grp.kind) {
            case GroupKind::full: {
                const std::uint32_t seg_len = grp.segment_tokens;
                const std::uint32_t boundary = to / seg_len * seg_len;
                create_units(w, r, g, Form::compressed_kv, (from / seg_len + 1) * seg_len, to, 0, 0, out, scratch);
                if (seg_len == block) break;
                for (std::uint32_t e = std::max(first_end, boundary + block); e <= to && !q.uncached; e += block)
                    create_owned(w, r, g, Form::uncompressed_tail, e - block, e, spec.key(e), boundary, false, out);
                break;
            }
            case GroupKind::swa:
                // A window block passes once the position is a window past its end (slide()).
                create_units(w, r, g, Form::swa_window, first_end, to,
                             to > grp.window_tokens ? to - grp.window_tokens : 0, 0, out, scratch);
                break;
            case GroupKind::chunked:
                create_units(w, r, g, Form::swa_window, first_end, to, to / grp.window_tokens * grp.window_tokens, 0,
                             out, scratch);
                break;
            case GroupKind::indexer:
                create_units(w, r, g, Form::indexer_state, first_end, to, 0, 0, out, scratch);
                break;
            case GroupKind::linear:
                for (std::uint32_t p = first_end; p <= to && !q.uncached; p += block) {
                    // Mutant `min-block-size-index`: the checkpoint's block number is counted in the
                    // smallest block size of all groups, then read back in the group's own size.
                    const std::uint32_t at =
                        w.defenses.own_block_size_index ? p : p / w.derived.min_block_tokens * block;
                    if (at > spec.input_tokens + spec.output_tokens) continue;
                    create_owned(w, r, g, Form::linear_state, 0, at, spec.key(at), p, false, out);
                }
                break;
        }
    }
}

bool private_window_block(const World& w, const Segment& s) {
    const CacheGroup& grp = w.group(s.group);
    if (grp.kind != GroupKind::swa) return false;
    if (s.units() == 1) return !window_block_resumable(w, grp, s.end);
    return retained_units(w, s) == 0;
}

// How many entries ahead complete_writes fetches index cells and slots; rows twice as far ahead.
namespace {
constexpr std::size_t kWriteAhead = 16;
}  // namespace

void complete_writes(World& w, std::uint32_t r) {
    Request& q = w.requests[r];
    // Each index cell is a cache miss once the index is large (proposal 3 of docs/performance.md),
    // and so are the rows and slots, written a while ago. Rows are fetched 2 * kWriteAhead entries
    // ahead, then give the cells and slots to fetch kWriteAhead ahead: a whole batch fetched at
    // once would outrun the outstanding misses a core can track.
    const auto prefetch = [&](std::uint32_t id) {
        const Segment& s = w.segments[id];
        const std::uint32_t scope = w.segment_scope(s);
        if (!s.duplicate && !private_window_block(w, s)) w.prefetch(s.key, s.group, s.is_tail, scope);
        if (w.group(s.group).kind == GroupKind::indexer)
            w.prefetch(s.key, static_cast<std::uint8_t>(w.group(s.group).indexed_group), false, scope);
        if (s.slot != kNone) __builtin_prefetch(&w.slots[s.slot], 1);
    };
    const std::size_t n = q.owned.size();
    for (std::size_t i = 0; i < std::min(n, 2 * kWriteAhead); ++i) w.prefetch_row(q.owned[i]);
    for (std::size_t i = 0; i < std::min(n, kWriteAhead); ++i) prefetch(q.owned[i]);
    for (std::size_t i = 0; i < n; ++i) {
        if (i + 2 * kWriteAhead < n) w.prefetch_row(q.owned[i + 2 * kWriteAhead]);
        if (i + kWriteAhead < n) prefetch(q.owned[i + kWriteAhead]);
        const std::uint32_t id = q.owned[i];
        Segment& s = w.segments[id];
        if (!s.live || s.writer != q.writer || s.slot == kNone) continue;
        if (s.stage != Stage::writing && !(s.stage == Stage::ready && w.slots[s.slot].content == 0)) continue;
        if (w.group(s.group).kind == GroupKind::indexer) {
            const auto kv_group = static_cast<std::uint8_t>(w.group(s.group).indexed_group);
            const std::uint32_t kv =
                covering_entry(w, *q.spec, kv_group, w.start_of(s) + w.group(s.group).block_tokens);
            s.set_indexed_version(kv == kNone ? 0 : w.segments[kv].data_version());
        }
        w.slots[s.slot].content = written_content(w, *q.spec, s);
        s.stage = Stage::ready;
        if (!s.duplicate && !private_window_block(w, s)) publish(w, id);
        touch(w, id);
    }
    q.owned.clear();
}

}  // namespace kvcheck::model
