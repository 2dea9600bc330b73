// World construction, the prefix index, ground-truth tags and the canonical state hash.
#include "model/world.hpp"

#include <algorithm>
#include <numeric>

#include "model/core.hpp"
#include "model/match.hpp"
#include "model/state_hash.hpp"

namespace kvcheck::model {

std::string_view stage_name(Stage stage) {
    switch (stage) {
        case Stage::writing: return "writing";
        case Stage::ready: return "ready";
        case Stage::evicting: return "evicting";
        case Stage::offloading: return "offloading";
        case Stage::on_disk: return "on_disk";
        case Stage::loading: return "loading";
        case Stage::freed: return "freed";
    }
    return "?";
}

std::string_view verdict_name(VerdictKind kind) {
    switch (kind) {
        case VerdictKind::resumable: return "resumable";
        case VerdictKind::io_wait: return "io_wait";
        case VerdictKind::partial_recompute: return "partial_recompute";
        case VerdictKind::full_recompute: return "full_recompute";
    }
    return "?";
}

std::string_view miss_reason_name(MissReason reason) {
    switch (reason) {
        case MissReason::not_cached: return "not_cached";
        case MissReason::rollout: return "rollout";
        case MissReason::version: return "version_mismatch";
        case MissReason::layout: return "layout_mismatch";
        case MissReason::misaligned: return "misaligned";
        case MissReason::partial_segment: return "partial_segment";
        case MissReason::window_expired: return "window_expired";
        case MissReason::index_stale: return "index_stale";
        case MissReason::not_resident: return "not_resident";
        case MissReason::load_failed: return "load_failed";
        case MissReason::writing: return "incomplete";
    }
    return "?";
}

std::string_view phase_name(Phase phase) {
    switch (phase) {
        case Phase::arrived: return "arrived";
        case Phase::waiting_io: return "waiting_io";
        case Phase::io_done: return "io_done";
        case Phase::validated: return "validated";
        case Phase::pinned: return "pinned";
        case Phase::revalidated: return "revalidated";
        case Phase::allocated: return "allocated";
        case Phase::read: return "read";
        case Phase::decoding: return "decoding";
        case Phase::done: return "done";
    }
    return "?";
}

RequestSpec make_request_spec(std::uint32_t uid, const std::vector<std::uint64_t>& block_ids,
                              std::uint32_t content_block_tokens, std::uint32_t input_tokens,
                              std::uint32_t output_tokens) {
    KV_ASSERT(content_block_tokens > 0, "content blocks need a size");
    RequestSpec spec;
    spec.uid = uid;
    spec.reuse_scope = uid;
    spec.input_tokens = input_tokens;
    spec.output_tokens = output_tokens;
    spec.content_block_tokens = content_block_tokens;
    const std::size_t needed = (input_tokens + content_block_tokens - 1) / content_block_tokens;
    KV_ASSERT(block_ids.size() >= needed, "fewer content blocks than the prompt needs");
    std::uint64_t h = 0x6b76636865636bULL;
    spec.chain.reserve(std::max<std::size_t>(needed, 1));
    for (std::size_t i = 0; i < std::max<std::size_t>(needed, 1) && i < block_ids.size(); ++i) {
        h = hash_combine(h, block_ids[i]);
        spec.chain.push_back(h);
    }
    if (spec.chain.empty()) spec.chain.push_back(hash_combine(h, uid));
    return spec;
}

RequestSpec sample_of(const RequestSpec& first, std::uint32_t uid, std::uint32_t sample) {
    KV_ASSERT(first.sample == 0 && sample > 0, "samples are forked from the first answer's request");
    RequestSpec spec = first;
    spec.uid = uid;
    spec.sample = sample;
    return spec;
}

RequestSpec make_turn_spec(std::uint32_t uid, std::shared_ptr<const RequestSpec> prior, std::uint32_t shared_blocks,
                           const std::vector<std::uint64_t>& block_ids, std::uint32_t content_block_tokens,
                           std::uint32_t input_tokens, std::uint32_t output_tokens) {
    KV_ASSERT(prior != nullptr, "a turn continues an earlier one");
    const std::uint32_t prior_tokens = prior->input_tokens + prior->output_tokens;
    KV_ASSERT(prior_tokens > 0 && input_tokens >= prior_tokens, "a turn's prompt holds the earlier prompt and answer");
    RequestSpec spec = make_request_spec(uid, block_ids, content_block_tokens, input_tokens, output_tokens);
    const std::uint64_t salt = prior->key(prior_tokens);
    for (std::size_t b = shared_blocks; b < spec.chain.size(); ++b) spec.chain[b] = hash_combine(spec.chain[b], salt);
    spec.prior = std::move(prior);
    spec.prior_tokens = prior_tokens;
    return spec;
}

World::World(std::shared_ptr<const ModelConfig> model, const Defenses& policy, Limits limit, Rollout mode)
    : config(std::move(model)), derived(derive(*config)), defenses(policy), rollout(mode), limits(limit) {
    KV_ASSERT(config != nullptr, "a world needs a model config");
    KV_ASSERT(config->groups.size() <= kMaxGroups, "a segment stores its group in 4 bits");
    layout_shift.assign(config->groups.size(), 0);
    lru_head.assign(config->groups.size() * 2, kNone);
    lru_tail.assign(config->groups.size() * 2, kNone);
    grain_tokens = resume_grain_of(*config, derived, defenses);
    for (std::uint8_t g = 0; g < config->groups.size(); ++g) {
        const CacheGroup& grp = config->groups[g];
        // The most units, within extent_tokens and kExtentUnitsMax, whose span is a multiple of
        // both the LCM grain and the unit, so that chunk starts lie on every policy's step grid.
        const std::uint32_t unit = unit_tokens(g, primary_form(grp));
        const std::uint64_t grid = std::lcm(std::uint64_t{derived.lcm_tokens}, std::uint64_t{unit});
        std::uint32_t units = std::min<std::uint32_t>(limits.extent_tokens / unit, kExtentUnitsMax);
        while (units > 1 && std::uint64_t{units} * unit % grid != 0) --units;
        extent_units.push_back(std::max<std::uint32_t>(units, 1));
        extent_step.push_back(std::lcm(grain_tokens, unit));
        if (grp.kind == GroupKind::swa && grain_tokens % grp.block_tokens == 0) {
            const std::uint64_t block = grp.block_tokens;
            const std::uint64_t window = grp.window_tokens;
            const std::uint64_t kept = std::min<std::uint64_t>(grain_tokens, (window + block - 1) / block * block);
            window_periods[g] = {true, static_cast<std::uint32_t>(kept / block),
                                 static_cast<std::uint32_t>((window + grain_tokens - 1) / grain_tokens - 1)};
        }
    }
}

std::uint16_t World::current_layout(std::uint8_t g) const {
    return static_cast<std::uint16_t>(config->groups[g].layout_id + layout_shift[g]);
}

std::uint64_t World::index_key(std::uint64_t content_key, std::uint8_t g, bool tail, std::uint32_t scope) const {
    return hash_combine(content_key, (std::uint64_t{scope} << 32) | (std::uint64_t{g} << 1) | (tail ? 1u : 0u));
}

std::uint32_t World::find(std::uint64_t content_key, std::uint8_t g, bool tail, std::uint32_t scope) const {
    return index.find(index_key(content_key, g, tail, scope),
                      [&](std::uint32_t id) { return holds(id, content_key, g, tail, scope); });
}

void World::prefetch(std::uint64_t content_key, std::uint8_t g, bool tail, std::uint32_t scope) const {
    index.prefetch(index_key(content_key, g, tail, scope));
}

std::uint64_t World::bytes_of_cut(const Segment& seg) const {
    const GroupBytes& b = derived.group_bytes[seg.group];
    // Tail blocks hold raw, uncompressed KV whatever the group's compression ratio.
    if (seg.is_tail) return (seg.end - start_of(seg)) * b.raw_bytes_per_token;
    if (b.size_fixed) return b.usual_bytes;
    return std::uint64_t{retained_units(*this, seg)} * b.usual_bytes;
}

std::uint32_t World::anchor_of(const Segment& seg) const {
    const CacheGroup& grp = config->groups[seg.group];
    // A tail block [e - block, e) is written with the boundary of the prefix being computed, and
    // lies wholly between that boundary and the next one.
    if (seg.is_tail) return start_of(seg) / grp.segment_tokens * grp.segment_tokens;
    if (seg.form != Form::linear_state) return 0;
    if (defenses.own_block_size_index) return seg.end;
    // Mutant `min-block-size-index` indexes the state of position p at p / min_block * block.
    // Blocks are at least min_block long, so only one multiple of block maps to this end: the
    // first one at or after (end / block) * min_block.
    const std::uint32_t min_block = derived.min_block_tokens;
    const std::uint32_t first = seg.end / grp.block_tokens * min_block;
    return (first + grp.block_tokens - 1) / grp.block_tokens * grp.block_tokens;
}

std::uint32_t World::add_request(std::shared_ptr<const RequestSpec> spec) {
    Request r;
    if (!free_requests.empty()) {  // the slot's lists keep their buffers
        Request& recycled = requests[free_requests.back()];
        r.plan.swap(recycled.plan);
        r.pinned.swap(recycled.pinned);
        r.owned.swap(recycled.owned);
    }
    Writer entry{spec, spec->uid, true};
    if (!free_writers.empty()) {
        r.writer = free_writers.back();
        free_writers.pop_back();
        writers[r.writer] = std::move(entry);
    } else {
        r.writer = static_cast<std::uint32_t>(writers.size());
        writers.push_back(std::move(entry));
    }
    r.spec = std::move(spec);
    if (!free_requests.empty()) {
        const std::uint32_t slot = free_requests.back();
        free_requests.pop_back();
        requests[slot] = std::move(r);
        return slot;
    }
    requests.push_back(std::move(r));
    graphs.emplace_back();
    return static_cast<std::uint32_t>(requests.size() - 1);
}

void World::release_request(std::uint32_t r) {
    Request& q = requests[r];
    KV_ASSERT(q.phase == Phase::done && q.pinned.empty() && !graphs[r].live,
              "release_request of a request still running");
    writers[q.writer].request_live = false;
    // A fresh request in the slot, which keeps the lists' buffers for the next one.
    Request fresh;
    fresh.plan.swap(q.plan);
    fresh.pinned.swap(q.pinned);
    fresh.owned.swap(q.owned);
    fresh.plan.clear();
    fresh.owned.clear();
    q = std::move(fresh);
    q.phase = Phase::done;
    free_requests.push_back(r);
    // A writer's entry outlives its request while a segment it wrote lives. Rather than count
    // references on every segment's birth and death, released writers are swept once as many
    // requests have been released as there are writers (amortised O(1) per request).
    if (++writers_released < std::max<std::size_t>(64, writers.size())) return;
    writers_released = 0;
    std::vector<bool> named(writers.size(), false);
    for (const Segment& seg : segments)
        if (seg.live) named[seg.writer] = true;
    for (std::uint32_t i = 0; i < writers.size(); ++i) {
        if (writers[i].request_live || named[i] || writers[i].spec == nullptr) continue;
        writers[i] = Writer{};
        free_writers.push_back(i);
    }
}

std::uint64_t truth_tag(const World& world, const RequestSpec& spec, std::uint8_t group, std::uint32_t start,
                        std::uint32_t end) {
    std::uint64_t h = hash_combine(world.kv_version, world.current_layout(group));
    h = hash_combine(h, spec.key(end));
    h = hash_combine(h, (std::uint64_t{group} << 32) | start);
    return h | 1;  // never 0: 0 marks bytes that were never written
}

std::uint64_t part_tag(const World& w, const Segment& s, std::uint64_t content, std::uint32_t start,
                       std::uint32_t end) {
    if (start == w.start_of(s) && end == s.end) return content;
    if (!units_retained(w, s, start, end)) return 0;
    return part_content(w, s, content, start, end);
}

std::uint64_t part_content(const World& w, const Segment& s, std::uint64_t content, std::uint32_t start,
                           std::uint32_t end) {
    if (start == w.start_of(s) && end == s.end) return content;
    const RequestSpec& writer = w.writer_spec(s);
    const auto correct = [&](std::uint32_t from, std::uint32_t to) {
        const std::uint64_t base = truth_tag(w, writer, s.group, from, to);
        return s.form == Form::indexer_state ? hash_combine(base, s.indexed_version()) | 1 : base;
    };
    return correct(start, end) ^ (content ^ correct(w.start_of(s), s.end));
}

// Epoch and config-epoch values only ever matter through equality with what a plan remembered,
// and they only grow, so the hash keeps just "still equal" bits: states that differ only in
// counter values behave identically and are merged.
std::uint64_t state_hash(const World& w) {
    const auto id_order = [&w](auto&& visit) {
        for (std::uint32_t id = 0; id < w.segments.size(); ++id)
            if (w.segments[id].live) visit(id);
    };
    return hash_state(w, id_order, [](std::uint32_t id) { return std::uint64_t{id}; });
}

void segments_by_recency(const World& world, Form form, bool hottest, std::vector<std::uint32_t>& out) {
    out.clear();
    for (std::size_t list = 0; list < world.lru_head.size(); ++list)
        for (std::uint32_t id = hottest ? world.lru_tail[list] : world.lru_head[list]; id != kNone;
             id = hottest ? world.segments[id].lru_prev : world.segments[id].lru_next)
            if (world.segments[id].form == form) out.push_back(id);
}

void captured_segments(const World& world, std::uint32_t first, std::vector<std::uint32_t>& out) {
    out.clear();
    const auto add = [&](std::uint32_t r) {
        if (r >= world.graphs.size() || !world.graphs[r].live) return;
        for (const GraphRef& ref : world.graphs[r].refs) out.push_back(ref.segment);
    };
    add(first);
    for (std::uint32_t r = 0; r < world.graphs.size(); ++r)
        if (r != first) add(r);
}

void eviction_heads(const World& world, std::vector<std::uint32_t>& out) {
    out.clear();
    for (std::uint32_t head : world.lru_head)
        if (head != kNone) out.push_back(head);
}

}  // namespace kvcheck::model
