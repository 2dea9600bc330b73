// The steps: a request's lifecycle (lookup, pin, revalidate, allocate, read, commit, decode,
// finish), the evictor, the I/O engine, the graph capturer and the fault injector (F1-F11).
#include "model/steps.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "model/core.hpp"
#include "model/transfer.hpp"
#include "model/walk.hpp"
#include "model/write.hpp"

namespace kvcheck::model {

namespace {

void let_go(World& w, Request& q, std::uint32_t id) {
    const auto it = std::find(q.pinned.begin(), q.pinned.end(), id);
    if (it == q.pinned.end()) return;
    q.pinned.erase(it);
    unpin(w, id);
}

void release_graph(World& w, std::uint32_t r) {
    Graph& g = w.graphs[r];
    if (!g.live) return;
    for (const GraphRef& ref : g.refs) {
        Segment& s = w.segments[ref.segment];
        if (s.graph_refs > 0) {
            --s.graph_refs;
            refresh_evictable(w, ref.segment);
        }
    }
    g.refs.clear();
    g.live = false;
}

void capture(World& w, std::uint32_t r) {
    Graph& g = w.graphs[r];
    for (std::uint32_t id : w.requests[r].pinned) {
        Segment& s = w.segments[id];
        if (!s.live || s.slot == kNone) continue;
        g.refs.push_back({id, s.slot, w.slots[s.slot].address});
        ++s.graph_refs;
        refresh_evictable(w, id);
    }
    g.live = true;
}

// Releases a block the request just let go of when it wrote it and nobody can read it again;
// an SWA extent that some resume can read keeps only those blocks (shed).
void release_if_unread(World& w, const Request& q, std::uint32_t id, StepOutcome& out) {
    const Segment& s = w.segments[id];
    if (s.writer != q.writer || s.stage != Stage::ready) return;
    const bool unread = s.is_tail || s.duplicate || private_window_block(w, s);
    if (unread && s.pins == 0) {
        out.evicted.push_back({s.form, w.bytes_of(s), EvictionCause::release, false, id});
        free_segment(w, id);
    } else if (!unread && s.units() > 1 && s.form == Form::swa_window && w.group(s.group).kind == GroupKind::swa &&
               !s.shed && s.slot != kNone && s.disk == kNone && retained_units(w, s) < s.units()) {
        out.evicted.push_back({s.form, shed(w, id), EvictionCause::release, false, id, true});
    }
}

// Drops the request's hold on blocks it no longer attends to: windows that slid past and
// rolling tails folded into a compressed segment. Its own blocks that nobody can read again are
// released: folded tails (the rolling buffer's reuse, F7) and window blocks no resume reads.
void slide(World& w, std::uint32_t r, StepOutcome& out) {
    Request& q = w.requests[r];
    const auto passed = [&](std::uint32_t id) {
        const Segment& s = w.segments[id];
        const CacheGroup& grp = w.group(s.group);
        if (grp.kind == GroupKind::swa) return s.end + grp.window_tokens <= q.pos;
        if (grp.kind == GroupKind::chunked) return s.end <= q.pos / grp.window_tokens * grp.window_tokens;
        return s.is_tail && s.end <= q.pos / grp.segment_tokens * grp.segment_tokens;
    };
    if (std::none_of(q.pinned.begin(), q.pinned.end(), passed)) return;
    // The guard takes the graph down before its addresses change and captures it again after.
    const bool recapture = w.graphs[r].live && w.defenses.graph_guard;
    if (recapture) release_graph(w, r);
    // One pass in pin order, keeping the holds that stay (let_go per block would be quadratic).
    std::size_t kept = 0;
    for (std::size_t i = 0; i < q.pinned.size(); ++i) {
        const std::uint32_t id = q.pinned[i];
        if (!passed(id)) {
            q.pinned[kept++] = id;
            continue;
        }
        unpin(w, id);
        release_if_unread(w, q, id, out);
    }
    q.pinned.resize(kept);
    if (recapture) {
        capture(w, r);
        ++out.recaptures;
    }
}

void drop_plan(World& w, Request& q) {
    for (const PlanEntry& e : q.plan)
        if (e.segment != kNone) let_go(w, q, e.segment);
    q.plan.clear();
}

void do_lookup(World& w, std::uint32_t r, StepOutcome& out, Scratch& scratch) {
    Request& q = w.requests[r];
    if (q.phase == Phase::io_done && !w.defenses.drop_verdict_on_failed_load) {
        // Mutant `sticky-lookup`: the verdict given before the loads stands, whatever they did.
        q.phase = Phase::validated;
        q.verdict = VerdictKind::resumable;
        return;
    }
    LookupResult res = lookup(w, q, scratch);
    if (q.lookups >= w.limits.max_lookups) {
        res.verdict = VerdictKind::full_recompute;
        res.resume_len = 0;
        res.recompute_from = 0;
        res.plan.clear();
        res.loads.clear();
    }
    ++q.lookups;
    q.hash_hit_len = res.hash_hit_len;
    q.resume_len = res.resume_len;
    q.verdict = res.verdict;
    q.plan = res.plan;
    q.config_epoch_at_lookup = w.config_epoch;
    for (const PlanEntry& e : q.plan)
        if (e.segment != kNone && w.segments[e.segment].live) touch(w, e.segment);
    q.phase = Phase::validated;
    if (res.verdict == VerdictKind::io_wait) {
        q.pending_loads = 0;
        for (std::uint32_t id : res.loads)
            if (start_load(w, r, id, out)) ++q.pending_loads;
        if (q.pending_loads > 0)
            q.phase = Phase::waiting_io;
        else {
            q.load_failed = true;
            q.plan.clear();
            q.phase = Phase::arrived;
        }
    }
    out.lookup = std::move(res);
}

// A request's loads go on without it and land for whoever reads those entries next.
void detach_loads(World& w, std::uint32_t r) {
    for (IoOp& op : w.io)
        if (op.live && op.kind == IoKind::load && op.request == r) op.request = kNone;
    w.requests[r].pending_loads = 0;
}

// The request gives up on its loads (detach_loads) and looks up again, taking only what is on
// the GPU by then (what the lookup before them planned holds no pins).
void do_stop_waiting(World& w, std::uint32_t r) {
    detach_loads(w, r);
    Request& q = w.requests[r];
    q.gave_up_waiting = true;
    if (!w.defenses.drop_verdict_on_failed_load) {
        // Mutant `sticky-lookup`: as after its loads, the next lookup keeps the plan made before
        // them, landed or not.
        q.phase = Phase::io_done;
        return;
    }
    q.plan.clear();
    q.phase = Phase::arrived;
}

// A request that waits or waited on loads ends without computing anything (a driver that fails
// a request whose load failed). It holds no pins and owns no entries yet.
void do_abort(World& w, std::uint32_t r) {
    detach_loads(w, r);
    Request& q = w.requests[r];
    q.plan.clear();
    q.phase = Phase::done;
}

// Before a reader holds the extents its plan reads parts of, each quiet one is split where the
// read starts and ends inside it, so that what the reader does not read stays free to be evicted,
// offloaded or hit by faults on its own (a radix cache splits a node where a match ends). Plans
// follow: their reads past the split name the new entry.
void split_for_plan(World& w, Request& q, StepOutcome& out) {
    for (std::size_t i = 0; i < q.plan.size(); ++i) {
        const PlanEntry e = q.plan[i];
        if (e.segment == kNone || !w.segments[e.segment].live || w.segments[e.segment].epoch != e.epoch ||
            w.segments[e.segment].units() == 1 || !sound_entry(w, *q.spec, e.segment))
            continue;
        for (const std::uint32_t at : {e.end, e.start}) {
            const std::uint32_t id = q.plan[i].segment;
            const Segment& s = w.segments[id];
            if (at <= w.start_of(s) || at >= s.end || s.pins != 0 || s.graph_refs != 0)
                continue;  // (split_segment's cheap checks first)
            // Every plan that validated the extent as it is now follows the split (the bytes stay
            // where they are), unless one reads across the split point. A plan that names the id
            // at an older epoch read something else and stays stale.
            const std::uint32_t epoch = s.epoch;
            const auto current = [&](const PlanEntry& o) { return o.segment == id && o.epoch == epoch; };
            const auto straddles = [&](const PlanEntry& o) { return current(o) && o.start < at && at < o.end; };
            if (std::any_of(w.requests.begin(), w.requests.end(), [&](const Request& other) {
                    return std::any_of(other.plan.begin(), other.plan.end(), straddles);
                }))
                continue;
            const std::uint32_t right = split_segment(w, id, at);
            if (right == kNone) continue;
            out.residency.push_back(
                {Residency::Kind::split, right, id, static_cast<std::uint32_t>(out.evicted.size())});
            for (Request& other : w.requests)
                for (PlanEntry& o : other.plan)
                    if (current(o) && o.start >= at)
                        o = {right, w.segments[right].epoch, w.segments[right].slot, o.start, o.end, o.group, o.form};
        }
    }
}

void do_pin(World& w, std::uint32_t r, StepOutcome& out) {
    Request& q = w.requests[r];
    split_for_plan(w, q, out);
    if (w.defenses.pin) {
        const std::uint8_t first = q.plan.empty() ? 0 : q.plan.front().group;
        for (const PlanEntry& e : q.plan) {
            if (e.segment == kNone || !w.segments[e.segment].live) continue;
            if (!w.defenses.pin_all_groups_first && e.group != first) continue;  // pinned after allocation
            hold(w, q, e.segment);
        }
    }
    q.phase = Phase::pinned;
}

void do_revalidate(World& w, std::uint32_t r, StepOutcome& out) {
    Request& q = w.requests[r];
    if (w.defenses.revalidate) {
        bool stale = w.config_epoch != q.config_epoch_at_lookup;
        for (const PlanEntry& e : q.plan) {
            if (e.segment == kNone) continue;
            const Segment& s = w.segments[e.segment];
            stale = stale || !s.live || s.epoch != e.epoch || !w.holds_range(s, e.start, e.end);
        }
        if (stale) {
            drop_plan(w, q);
            q.phase = Phase::arrived;
            out.stale_revalidation = true;
            return;
        }
    }
    q.phase = Phase::revalidated;
}

void do_allocate(World& w, std::uint32_t r, StepOutcome& out, Scratch& scratch) {
    Request& q = w.requests[r];
    write_range(w, r, q.resume_len, q.spec->input_tokens, out, scratch);
    if (w.defenses.pin && !w.defenses.pin_all_groups_first) {
        const std::uint8_t first = q.plan.empty() ? 0 : q.plan.front().group;
        for (const PlanEntry& e : q.plan)
            if (e.segment != kNone && e.group != first && w.segments[e.segment].live) hold(w, q, e.segment);
    }
    if (!w.defenses.publish_after_complete) {
        // Mutant `hash-before-complete`: the hash goes out with the allocation, before the content.
        for (std::uint32_t id : q.owned) {
            w.segments[id].stage = Stage::ready;
            if (!w.segments[id].duplicate) publish(w, id);
            refresh_evictable(w, id);
        }
    }
    q.phase = Phase::allocated;
}

void do_commit(World& w, std::uint32_t r, StepOutcome& out) {
    Request& q = w.requests[r];
    complete_writes(w, r);
    out.tokens_computed = q.spec->input_tokens - q.resume_len;
    q.pos = q.spec->input_tokens;
    q.phase = Phase::decoding;
    slide(w, r, out);
    // Decode runs as a captured graph over the request's working set (graph-capture mode).
    if (w.limits.capture_graphs && q.spec->output_tokens > 0) capture(w, r);
}

void do_decode(World& w, std::uint32_t r, std::uint32_t tokens, StepOutcome& out, Scratch& scratch) {
    Request& q = w.requests[r];
    const std::uint32_t end = q.spec->input_tokens + q.spec->output_tokens;
    const std::uint32_t step = std::min(tokens == 0 ? w.derived.min_block_tokens : tokens, end - q.pos);
    write_range(w, r, q.pos, q.pos + step, out, scratch);
    complete_writes(w, r);
    q.pos += step;
    out.tokens_computed = step;
    slide(w, r, out);
}

void do_finish(World& w, std::uint32_t r, StepOutcome& out) {
    Request& q = w.requests[r];
    release_graph(w, r);
    for (std::uint32_t id : q.pinned) {
        unpin(w, id);
        const Segment& s = w.segments[id];
        if (s.duplicate || w.group(s.group).kind == GroupKind::swa) release_if_unread(w, q, id, out);
    }
    q.pinned.clear();
    q.plan.clear();
    q.phase = Phase::done;
}

}  // namespace

std::optional<StepKind> next_request_step(const Request& q) {
    if (q.spec == nullptr) return std::nullopt;  // a recycled slot
    switch (q.phase) {
        case Phase::arrived:
        case Phase::io_done: return StepKind::lookup;
        case Phase::validated: return StepKind::pin;
        case Phase::pinned: return StepKind::revalidate;
        case Phase::revalidated: return StepKind::allocate;
        case Phase::allocated: return StepKind::read;
        case Phase::read: return StepKind::commit;
        case Phase::decoding:
            return q.pos < q.spec->input_tokens + q.spec->output_tokens ? StepKind::decode : StepKind::finish;
        case Phase::waiting_io:
        case Phase::done: return std::nullopt;
    }
    return std::nullopt;
}

namespace {

bool request_enabled(const World& w, const Step& step) {
    if (step.target >= w.requests.size()) return false;
    const Phase phase = w.requests[step.target].phase;
    if (step.kind == StepKind::stop_waiting) return phase == Phase::waiting_io;
    if (step.kind == StepKind::abort) return phase == Phase::waiting_io || phase == Phase::io_done;
    return next_request_step(w.requests[step.target]) == step.kind;
}

// Whether a request that has revalidated its plan, and reads next, holds a pin on segment `id`.
bool read_pending_on(const World& w, std::uint32_t id) {
    return std::any_of(w.requests.begin(), w.requests.end(), [id](const Request& q) {
        return (q.phase == Phase::revalidated || q.phase == Phase::allocated) &&
               std::find(q.pinned.begin(), q.pinned.end(), id) != q.pinned.end();
    });
}

bool segment_enabled(const World& w, const Step& step) {
    if (step.target >= w.segments.size()) return false;
    const Segment& s = w.segments[step.target];
    if (!s.live) return false;
    switch (step.kind) {
        case StepKind::evict: return is_evictable(w, s);
        case StepKind::offload:
            // The cheap tests first: the offloader asks this of every segment it walks past.
            return s.stage == Stage::ready && s.disk == kNone && is_evictable(w, s) && tier_has_room(w, w.bytes_of(s));
        case StepKind::interrupt_eviction:
            return is_evictable(w, s) && s.form == Form::compressed_kv && s.stage == Stage::ready;
        // What a request revalidated stays as it was until its read (RL3): the index does not
        // skew under a read in flight (a pinned entry not yet revalidated may skew; revalidation
        // then sees it).
        case StepKind::skew_index:
            return s.stage == Stage::ready && s.form == Form::indexer_state && s.slot != kNone &&
                   (s.pins == 0 || !read_pending_on(w, step.target));
        case StepKind::migrate: return is_evictable(w, s) && s.stage == Stage::ready;
        case StepKind::lose_block:
            return is_evictable(w, s) && s.form == Form::compressed_kv && s.whole && s.stage == Stage::ready;
        default: return false;
    }
}

bool read_in_flight(const World& w) {
    return std::any_of(w.requests.begin(), w.requests.end(),
                       [](const Request& q) { return q.phase == Phase::revalidated || q.phase == Phase::allocated; });
}

}  // namespace

bool may_offload_from(const World& w, std::size_t list) {
    if (w.disk_lru_head != kNone) return true;  // the tier can drop an entry for room
    if (w.disk_used_bytes <= w.limits.disk_capacity_bytes &&
        w.limits.disk_capacity_bytes - w.disk_used_bytes >= w.derived.min_entry_bytes)
        return true;
    const std::uint8_t g = World::lru_list_group(list);
    return !World::lru_list_of_tails(list) && w.group(g).kind == GroupKind::swa && w.extent_units[g] > 1;
}

OffloadWalk::OffloadWalk(const World& world) : world_(world) {
    id_ = world_.lru_head.empty() || !may_offload_from(world_, 0) ? kNone : world_.lru_head[0];
    settle();
}

void OffloadWalk::advance() {
    id_ = next_;
    settle();
}

void OffloadWalk::settle() {
    while (id_ == kNone && ++list_ < world_.lru_head.size())
        if (may_offload_from(world_, list_)) id_ = world_.lru_head[list_];
    next_ = id_ == kNone ? kNone : world_.segments[id_].lru_next;
}

bool is_fault(StepKind kind) {
    switch (kind) {
        case StepKind::io_fail:
        case StepKind::interrupt_eviction:
        case StepKind::skew_index:
        case StepKind::bump_model_version:
        case StepKind::change_layout:
        case StepKind::misaligned_reload:
        case StepKind::migrate:
        case StepKind::lose_block:
        case StepKind::partial_load: return true;
        default: return false;
    }
}

StepTarget target_of(StepKind kind) {
    switch (kind) {
        case StepKind::lookup:
        case StepKind::pin:
        case StepKind::revalidate:
        case StepKind::allocate:
        case StepKind::read:
        case StepKind::commit:
        case StepKind::decode:
        case StepKind::finish:
        case StepKind::stop_waiting:
        case StepKind::abort: return StepTarget::request;
        case StepKind::evict:
        case StepKind::offload:
        case StepKind::interrupt_eviction:
        case StepKind::skew_index:
        case StepKind::migrate:
        case StepKind::lose_block: return StepTarget::segment;
        case StepKind::io_complete:
        case StepKind::io_fail:
        case StepKind::misaligned_reload:
        case StepKind::partial_load: return StepTarget::io;
        case StepKind::bump_model_version:
        case StepKind::change_layout: return StepTarget::global;
    }
    KV_UNREACHABLE("unknown step kind");
}

bool enabled(const World& w, const Step& step) {
    switch (target_of(step.kind)) {
        case StepTarget::request: return request_enabled(w, step);
        case StepTarget::segment: return segment_enabled(w, step);
        case StepTarget::io:
            return step.target < w.io.size() && w.io[step.target].live &&
                   ((step.kind != StepKind::misaligned_reload && step.kind != StepKind::partial_load) ||
                    w.io[step.target].kind == IoKind::load);
        // Weights and layouts change between scheduler iterations, never inside a read that has
        // already been revalidated: such a change drains in-flight reads first.
        case StepTarget::global:
            if (step.kind == StepKind::bump_model_version) return w.kv_version < 0xFFFE && !read_in_flight(w);
            return step.target < w.config->groups.size() && w.layout_shift[step.target] < 0xFF && !read_in_flight(w);
    }
    return false;
}

namespace {
void offered_into(World& w, const Step& step, StepOutcome& out, Scratch& scratch);
}  // namespace

StepOutcome apply(World& w, const Step& step) {
    KV_ASSERT(enabled(w, step), "apply() of a step that is not enabled: " + describe(w, step));
    StepOutcome out;
    Scratch scratch;
    offered_into(w, step, out, scratch);
    return out;
}

void apply_into(World& w, const Step& step, StepOutcome& out, Scratch& scratch) {
    out.reset();
    offered_into(w, step, out, scratch);
}

namespace {

void offered_into(World& w, const Step& step, StepOutcome& out, Scratch& scratch) {
    w.moved_under_graph = 0;
    w.cross_form_reuse = 0;
    const std::uint32_t t = step.target;
    switch (step.kind) {
        case StepKind::lookup: do_lookup(w, t, out, scratch); break;
        case StepKind::pin: do_pin(w, t, out); break;
        case StepKind::revalidate: do_revalidate(w, t, out); break;
        case StepKind::allocate: do_allocate(w, t, out, scratch); break;
        case StepKind::read:
            out.read_request = t;
            w.requests[t].phase = Phase::read;
            break;
        case StepKind::commit: do_commit(w, t, out); break;
        case StepKind::decode: do_decode(w, t, step.arg, out, scratch); break;
        case StepKind::finish: do_finish(w, t, out); break;
        case StepKind::stop_waiting: do_stop_waiting(w, t); break;
        case StepKind::abort: do_abort(w, t); break;
        case StepKind::evict:
            out.evicted.push_back({w.segments[t].form, w.bytes_of(w.segments[t]), EvictionCause::evict_step,
                                   keeps_disk_copy(w.segments[t]), t});
            evict_segment(w, t);
            break;
        case StepKind::offload: {
            start_offload(w, t, out);
            // The indexer pages share the KV block's table entry, so they go to disk with it.
            const std::uint8_t ig = indexer_of(w, w.segments[t].group);
            const Segment& kv = w.segments[t];
            const std::uint32_t partner =
                ig == 0xFF ? kNone
                           : covering_entry(w, w.writer_spec(kv), ig, w.start_of(kv) + w.group(ig).block_tokens);
            if (partner != kNone && segment_enabled(w, {StepKind::offload, partner, 0})) start_offload(w, partner, out);
            break;
        }
        case StepKind::io_complete: finish_io(w, t, IoEnd::complete, out); break;
        case StepKind::io_fail: finish_io(w, t, IoEnd::failed, out); break;
        case StepKind::misaligned_reload: finish_io(w, t, IoEnd::misaligned, out); break;
        case StepKind::partial_load: finish_io(w, t, IoEnd::partial, out); break;
        case StepKind::interrupt_eviction: {
            Segment& s = w.segments[t];
            s.stage = Stage::evicting;
            s.whole = false;
            w.slots[s.slot].content ^= 0x2;  // half of its blocks are already gone
            ++s.epoch;
            refresh_evictable(w, t);
            break;
        }
        case StepKind::skew_index: {
            // The index is left over from another KV version: its numbers and its version differ.
            Segment& s = w.segments[t];
            s.set_indexed_version(static_cast<std::uint16_t>(s.indexed_version() + 1));
            w.slots[s.slot].content = hash_combine(w.slots[s.slot].content, 0x3) | 1;
            ++s.epoch;
            break;
        }
        case StepKind::bump_model_version:
            ++w.kv_version;
            ++w.config_epoch;
            break;
        case StepKind::change_layout:
            ++w.layout_shift[t];
            ++w.config_epoch;
            break;
        case StepKind::migrate:
            out.graph_moved = w.segments[t].graph_refs > 0;
            relocate(w, t);
            break;
        case StepKind::lose_block: {
            Segment& s = w.segments[t];
            s.whole = false;
            w.slots[s.slot].content ^= 0x4;
            ++s.epoch;
            break;
        }
    }
}

}  // namespace

void enabled_steps(const World& w, std::uint32_t kinds, std::vector<Step>& out) {
    out.clear();
    auto consider = [&](StepKind kind, std::uint32_t target) {
        const Step s{kind, target, 0};
        if ((kinds & kind_bit(kind)) != 0 && enabled(w, s)) out.push_back(s);
    };
    for (std::uint32_t r = 0; r < w.requests.size(); ++r) {
        const std::optional<StepKind> k = next_request_step(w.requests[r]);
        if (k && (kinds & kind_bit(*k)) != 0) out.push_back({*k, r, 0});
        consider(StepKind::stop_waiting, r);
        consider(StepKind::abort, r);
    }
    const bool partial_differs = !w.defenses.load_length_check;  // else partial_load leads where io_fail does
    for (std::uint32_t i = 0; i < w.io.size(); ++i) {
        for (StepKind k : {StepKind::io_complete, StepKind::io_fail, StepKind::misaligned_reload}) consider(k, i);
        if (partial_differs) consider(StepKind::partial_load, i);
    }
    for (std::uint32_t head : w.lru_head) {
        if (head == kNone) continue;
        std::size_t rank = 0;
        for (std::uint32_t id = head; id != kNone && rank < kEvictionChoices; id = w.segments[id].lru_next, ++rank) {
            consider(StepKind::evict, id);
            consider(StepKind::offload, id);
        }
        for (StepKind k : {StepKind::interrupt_eviction, StepKind::skew_index, StepKind::migrate, StepKind::lose_block})
            consider(k, head);
    }
    consider(StepKind::bump_model_version, 0);
    for (std::uint32_t g = 0; g < w.config->groups.size(); ++g) consider(StepKind::change_layout, g);
}

}  // namespace kvcheck::model
