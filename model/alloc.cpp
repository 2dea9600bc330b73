// Allocation and reclamation paths. Each form has its own free list; the `shared-freelist` mutant
// sends every form through one list and forgets to clear labels, which RL2 then catches.
#include "model/alloc.hpp"

#include <algorithm>

#include "model/core.hpp"

namespace kvcheck::model {

std::string_view eviction_cause_name(EvictionCause cause) {
    switch (cause) {
        case EvictionCause::admission: return "admission";
        case EvictionCause::release: return "release";
        case EvictionCause::evict_step: return "evict_step";
        case EvictionCause::tier_full: return "tier_full";
    }
    KV_UNREACHABLE("unknown eviction cause");
}

namespace {

// Eviction order: expired windows and rolling tails are cheapest to lose, recurrent checkpoints
// and compressed segments (whole-or-nothing, costly to recompute) the dearest.
constexpr std::array<Form, 5> kEvictionOrder = {Form::swa_window, Form::uncompressed_tail, Form::indexer_state,
                                                Form::compressed_kv, Form::linear_state};

// Each form's position in kEvictionOrder, kEvictionOrder.size() for a form never evicted for room.
constexpr std::array<std::size_t, kFormCount> kEvictionRank = [] {
    std::array<std::size_t, kFormCount> rank{};
    rank.fill(kEvictionOrder.size());
    for (std::size_t i = 0; i < kEvictionOrder.size(); ++i) rank[static_cast<std::size_t>(kEvictionOrder[i])] = i;
    return rank;
}();

std::uint32_t take_slot(World& w, Form form) {
    auto& list = w.defenses.separate_freelists ? w.free_slots[static_cast<int>(form)] : w.shared_free_slots;
    std::uint32_t id;
    if (!list.empty()) {
        id = list.back();
        list.pop_back();
    } else {
        id = static_cast<std::uint32_t>(w.slots.size());
        Slot fresh;
        fresh.pool = form;
        fresh.address = canonical_address(form, id);
        w.slots.push_back(fresh);
    }
    if (w.slots[id].pool != form) ++w.cross_form_reuse;
    w.slots[id].label = static_cast<std::uint8_t>(form);
    w.slots[id].content = 0;
    return id;
}

void give_back_slot(World& w, std::uint32_t slot) {
    Slot& s = w.slots[slot];
    s.owner = kNone;
    s.address = canonical_address(s.pool, slot);
    if (w.defenses.separate_freelists) {
        s.label = kNoLabel;
        w.free_slots[static_cast<int>(s.pool)].push_back(slot);
    } else {
        w.shared_free_slots.push_back(slot);  // the label stays: "block is empty but the form label wasn't cleared"
    }
}

// Starts fetching the index cell and the slot that evicting segment id would touch. A list's new
// head is usually the next admission's victim, and its own row is in cache already (the eviction
// just unlinked it from the old head), so the next eviction's misses overlap with other work.
void prefetch_eviction(const World& w, std::uint32_t id) {
    if (id == kNone) return;
    const Segment& s = w.segments[id];
    if (s.published) w.prefetch(s.key, s.group, s.is_tail, w.segment_scope(s));
    if (s.slot != kNone) __builtin_prefetch(&w.slots[s.slot], 1);
}

// Makes room for `bytes` more on the GPU. Returns false when nothing more can be evicted.
bool make_room(World& w, std::uint64_t bytes, AdmissionLog* log) {
    if (!w.defenses.admission_cap) return true;
    while (w.gpu_used_bytes + bytes > w.limits.gpu_budget_bytes) {
        // The head of the first list whose form comes first in kEvictionOrder, found in one pass
        // over the heads (each head's form is read once, not once per form).
        std::uint32_t victim = kNone;
        std::size_t victim_rank = kEvictionOrder.size();
        for (std::uint32_t head : w.lru_head) {
            if (head == kNone) continue;
            const std::size_t rank = kEvictionRank[static_cast<std::size_t>(w.segments[head].form)];
            if (rank < victim_rank) {
                victim = head;
                victim_rank = rank;
            }
        }
        if (victim == kNone) return false;
        if (log != nullptr) {
            const Segment& v = w.segments[victim];
            log->evicted.push_back({v.form, w.bytes_of(v), EvictionCause::admission, keeps_disk_copy(v), victim});
        }
        const std::size_t list = World::lru_list(w.segments[victim]);
        evict_segment(w, victim);
        prefetch_eviction(w, w.lru_head[list]);
    }
    return true;
}

std::uint32_t new_segment_id(World& w) {
    if (!w.free_segment_ids.empty()) {
        const std::uint32_t id = w.free_segment_ids.back();
        w.free_segment_ids.pop_back();
        return id;
    }
    w.segments.emplace_back();
    return static_cast<std::uint32_t>(w.segments.size() - 1);
}

}  // namespace

std::uint64_t canonical_address(Form pool, std::uint32_t slot) {
    return (static_cast<std::uint64_t>(pool) + 1) << 40 | (std::uint64_t{slot} * 4096);
}

bool is_evictable(const World& w, const Segment& s) {
    return s.live && s.slot != kNone && s.pins == 0 && (s.stage == Stage::ready || s.stage == Stage::evicting) &&
           (s.graph_refs == 0 || !w.defenses.graph_guard);
}

namespace {

// Unlinks a segment from the list whose ends are head and tail.
void unlink(World& w, std::uint32_t id, std::uint32_t& head, std::uint32_t& tail) {
    Segment& s = w.segments[id];
    if (s.lru_prev != kNone)
        w.segments[s.lru_prev].lru_next = s.lru_next;
    else
        head = s.lru_next;
    if (s.lru_next != kNone)
        w.segments[s.lru_next].lru_prev = s.lru_prev;
    else
        tail = s.lru_prev;
    s.lru_prev = s.lru_next = kNone;
}

void link_back(World& w, std::uint32_t id, std::uint32_t& head, std::uint32_t& tail) {
    Segment& s = w.segments[id];
    s.lru_prev = tail;
    s.lru_next = kNone;
    if (s.lru_prev != kNone)
        w.segments[s.lru_prev].lru_next = id;
    else
        head = id;
    tail = id;
}

// Takes a segment out of the eviction list that holds it: its group's when it holds a GPU slot
// (only resident entries are GPU candidates), else the host/disk tier's.
void lru_remove(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    if (!s.in_lru) return;
    if (s.slot != kNone) {
        const std::size_t f = World::lru_list(s);
        unlink(w, id, w.lru_head[f], w.lru_tail[f]);
    } else {
        unlink(w, id, w.disk_lru_head, w.disk_lru_tail);
    }
    s.in_lru = false;
}

// An entry whose only copy sits on the host/disk tier, which the tier may drop for room.
bool in_tier_list(const World& w, const Segment& s) {
    return w.limits.tier_eviction && s.live && s.stage == Stage::on_disk && s.pins == 0;
}

// Host memory's list of copies (World::host_head): copy `id` in after `prev` (first when kNone),
// its bytes the caller's to count (a split's part shares the whole's), and out again, to disk or
// off the tier, with its bytes.
void host_link_after(World& w, std::uint32_t id, std::uint32_t prev) {
    DiskObject& d = w.disk[id];
    d.host_prev = prev;
    d.host_next = prev != kNone ? w.disk[prev].host_next : w.host_head;
    (prev != kNone ? w.disk[prev].host_next : w.host_head) = id;
    (d.host_next != kNone ? w.disk[d.host_next].host_prev : w.host_tail) = id;
    d.on_host = 1;
}

void leave_host(World& w, std::uint32_t id) {
    DiskObject& d = w.disk[id];
    w.host_used_bytes -= w.bytes_of(w.segments[d.owner]);
    (d.host_prev != kNone ? w.disk[d.host_prev].host_next : w.host_head) = d.host_next;
    (d.host_next != kNone ? w.disk[d.host_next].host_prev : w.host_tail) = d.host_prev;
    d.host_prev = d.host_next = kNone;
    d.on_host = 0;
}

}  // namespace

void refresh_evictable(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    const bool gpu = is_evictable(w, s);
    const bool tier = !gpu && in_tier_list(w, s);
    if (!gpu && !tier) {
        lru_remove(w, id);
    } else if (!s.in_lru) {
        const std::size_t f = World::lru_list(s);
        if (gpu)
            link_back(w, id, w.lru_head[f], w.lru_tail[f]);
        else
            link_back(w, id, w.disk_lru_head, w.disk_lru_tail);
        s.in_lru = true;
    }
}

bool tier_has_room(const World& w, std::uint64_t bytes) {
    if (w.disk_used_bytes + bytes <= w.limits.disk_capacity_bytes) return true;
    if (!w.limits.tier_eviction) return false;
    std::uint64_t used = w.disk_used_bytes;
    for (std::uint32_t id = w.disk_lru_head; id != kNone; id = w.segments[id].lru_next) {
        used -= w.bytes_of(w.segments[id]);
        if (used + bytes <= w.limits.disk_capacity_bytes) return true;
    }
    return false;
}

void make_tier_room(World& w, std::uint64_t bytes, std::vector<Eviction>& evicted) {
    while (w.disk_used_bytes + bytes > w.limits.disk_capacity_bytes) {
        const std::uint32_t victim = w.disk_lru_head;
        KV_ASSERT(victim != kNone, "make_tier_room without the room tier_has_room promised");
        const Segment& v = w.segments[victim];
        evicted.push_back({v.form, w.bytes_of(v), EvictionCause::tier_full, false, victim});
        free_segment(w, victim);
    }
}

void touch(World& w, std::uint32_t id) {
    lru_remove(w, id);
    refresh_evictable(w, id);
}

std::uint32_t create_segment(World& w, std::uint8_t group, Form form, std::uint32_t start, std::uint32_t end,
                             std::uint64_t key, std::uint32_t writer, AdmissionLog* log) {
    Segment probe;
    probe.group = group & 0xF;
    probe.form = form;
    probe.end = end;
    probe.is_tail = form == Form::uncompressed_tail;
    const std::uint32_t units = form == Form::linear_state ? 1 : (end - start) / w.unit_tokens(group, form);
    KV_ASSERT(units >= 1 && units <= w.extent_units_of(group, form), "an entry covers 1 to extent_units_of units");
    KV_ASSERT(units == 1 || w.chunk_start(group, form, start) == w.chunk_start(group, form, end - 1),
              "an extent stays within one chunk");
    probe.extra_units = static_cast<std::uint8_t>(units - 1);
    KV_ASSERT_EQ(w.start_of(probe), start, "a segment's start is derived from its end, unit count, group and form");
    KV_ASSERT(probe.is_tail || w.derived.group_bytes[group].size_fixed ||
                  w.unit_tokens(group, form) == w.derived.group_bytes[group].usual_tokens,
              "an entry's unit is its group's usual entry (World::bytes_of sizes it so)");
    // The row a reused id names is usually cold: fetch it while make_room works (an eviction that
    // frees a segment pushes a row that is in cache anyway).
    if (!w.free_segment_ids.empty()) w.prefetch_row(w.free_segment_ids.back());
    const std::uint64_t bytes = w.bytes_of(probe);
    if (!make_room(w, bytes + kStateEntryBytes, log)) {
        if (log != nullptr) log->refused = true;
        return kNone;
    }
    const std::uint32_t id = new_segment_id(w);
    Segment& s = w.segments[id];
    const std::uint32_t epoch = s.epoch + 1;  // a reused id never repeats an epoch, so stale plans stay detectable
    s = Segment{};
    s.epoch = epoch;
    s.key = key;
    s.end = end;
    s.group = group & 0xF;
    s.form = form;
    s.is_tail = form == Form::uncompressed_tail;
    s.stage = Stage::writing;
    s.kv_version = w.kv_version;
    s.layout_id = w.current_layout(group);
    s.writer = writer;
    s.extra_units = probe.extra_units;
    s.live = true;
    s.slot = take_slot(w, form);
    w.slots[s.slot].owner = id;
    ++w.live_segments;
    w.gpu_used_bytes += bytes + kStateEntryBytes;
    w.bytes_by_form[static_cast<int>(form)] += bytes;
    return id;
}

bool admit_slot(World& w, std::uint32_t id, AdmissionLog* log) {
    const std::uint64_t bytes = w.bytes_of(w.segments[id]);
    if (!make_room(w, bytes, log)) {
        if (log != nullptr) log->refused = true;
        return false;
    }
    lru_remove(w, id);  // out of the tier's list before it holds a slot (lru_remove tells the lists apart so)
    Segment& s = w.segments[id];
    KV_ASSERT(s.slot == kNone, "admit_slot on a resident segment");
    s.slot = take_slot(w, s.form);
    w.slots[s.slot].owner = id;
    w.gpu_used_bytes += bytes;
    w.bytes_by_form[static_cast<int>(s.form)] += bytes;
    return true;
}

void release_slot(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    if (s.slot == kNone) return;
    if (s.graph_refs > 0) ++w.moved_under_graph;
    lru_remove(w, id);
    const std::uint64_t bytes = w.bytes_of(s);
    w.gpu_used_bytes -= bytes;
    w.bytes_by_form[static_cast<int>(s.form)] -= bytes;
    give_back_slot(w, s.slot);
    s.slot = kNone;
}

void free_segment(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    KV_ASSERT(s.live, "free_segment on a dead segment");
    unpublish(w, id);
    lru_remove(w, id);
    release_slot(w, id);
    if (s.disk != kNone) {
        free_disk(w, s.disk);
        const std::uint64_t bytes = w.bytes_of(s);
        w.disk_used_bytes -= bytes;
        w.bytes_by_form[static_cast<int>(Form::on_disk_prefix)] -= bytes;
        s.disk = kNone;
    }
    s.live = false;
    s.stage = Stage::freed;
    ++s.epoch;
    --w.live_segments;
    w.gpu_used_bytes -= kStateEntryBytes;
    w.free_segment_ids.push_back(id);
}

void evict_segment(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    if (!keeps_disk_copy(s)) {
        free_segment(w, id);
        return;
    }
    // A copy already sits on disk: dropping the GPU copy leaves a registered on-disk prefix.
    release_slot(w, id);
    s.stage = Stage::on_disk;
    ++s.epoch;
    refresh_evictable(w, id);
}

void publish(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    if (s.published) return;
    // A newer segment for the same prefix replaces the older one in the index. (An extent's key
    // is its first unit's, so the newer one starts where the older one does.)
    const std::uint32_t scope = w.segment_scope(s);
    const std::uint32_t replaced =
        w.index.put(w.index_key(s.key, s.group, s.is_tail, scope), id,
                    [&](std::uint32_t other) { return w.holds(other, s.key, s.group, s.is_tail, scope); });
    if (replaced != FlatIndex::kMissing && replaced != id) w.segments[replaced].published = false;
    s.published = true;
}

std::uint64_t shed(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    KV_ASSERT(s.form == Form::swa_window && !s.shed && s.slot != kNone && s.disk == kNone,
              "only a resident SWA entry without a disk copy sheds");
    const std::uint64_t before = w.bytes_of(s);
    s.shed = true;
    const std::uint64_t freed = before - w.bytes_of(s);
    w.gpu_used_bytes -= freed;
    w.bytes_by_form[static_cast<int>(s.form)] -= freed;
    return freed;
}

std::uint32_t split_segment(World& w, std::uint32_t id, std::uint32_t at) {
    {
        const Segment& s = w.segments[id];
        const std::uint32_t start = w.start_of(s);
        const std::uint32_t unit = w.unit_tokens(s.group, s.form);
        const bool quiet = s.live && s.pins == 0 && s.graph_refs == 0 && !s.duplicate &&
                           (s.stage == Stage::ready || s.stage == Stage::on_disk);
        if (!quiet || s.units() == 1 || at <= start || at >= s.end || (at - start) % unit != 0) return kNone;
        if (w.defenses.admission_cap && w.gpu_used_bytes + kStateEntryBytes > w.limits.gpu_budget_bytes) return kNone;
    }
    if (!w.free_segment_ids.empty()) w.prefetch_row(w.free_segment_ids.back());
    const std::uint32_t right = new_segment_id(w);
    Segment& s = w.segments[id];  // new_segment_id may have moved the table
    Segment& r = w.segments[right];
    const std::uint32_t unit = w.unit_tokens(s.group, s.form);
    const std::uint32_t start = w.start_of(s);
    const std::uint32_t epoch = r.epoch + 1;
    r = s;
    r.epoch = epoch;
    r.lru_prev = r.lru_next = kNone;
    r.in_lru = false;
    r.published = false;
    r.extra_units = static_cast<std::uint8_t>((s.end - at) / unit - 1);
    r.key = w.writer_spec(s).key(at + unit);
    s.extra_units = static_cast<std::uint8_t>((at - start) / unit - 1);
    s.end = at;  // its epoch stays: a plan within [start, at) still reads what it validated
    // Each part holds its share of what the whole held (part_content), read off the whole first.
    const Segment whole = [&] {
        Segment w0 = s;
        w0.end = r.end;
        w0.extra_units = static_cast<std::uint8_t>((r.end - start) / unit - 1);
        return w0;
    }();
    if (s.slot != kNone) {
        const std::uint64_t content = w.slots[s.slot].content;
        const std::uint64_t misaligned = w.slots[s.slot].address % kAlignBytes;
        r.slot = take_slot(w, r.form);
        w.slots[r.slot].owner = right;
        w.slots[r.slot].content = part_content(w, whole, content, at, r.end);
        w.slots[r.slot].address += misaligned;
        w.slots[s.slot].content = part_content(w, whole, content, start, at);
    }
    if (s.disk != kNone) {
        const std::uint64_t content = w.disk[s.disk].content;
        r.disk = allocate_disk(w, right);
        if (w.disk[s.disk].on_host != 0) host_link_after(w, r.disk, s.disk);  // the parts share the whole's bytes
        w.disk[r.disk].content = part_content(w, whole, content, at, r.end);
        w.disk[s.disk].content = part_content(w, whole, content, start, at);
    }
    ++w.live_segments;
    w.gpu_used_bytes += kStateEntryBytes;
    if (s.published) publish(w, right);
    if (s.in_lru) {  // the new part is as old as the rest: right after it in its list
        r.lru_prev = id;
        r.lru_next = s.lru_next;
        if (s.lru_next != kNone)
            w.segments[s.lru_next].lru_prev = right;
        else if (s.slot != kNone)
            w.lru_tail[World::lru_list(r)] = right;
        else
            w.disk_lru_tail = right;
        s.lru_next = right;
        r.in_lru = true;
    }
    return right;
}

void unpublish(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    if (!s.published) return;
    w.index.erase(w.index_key(s.key, s.group, s.is_tail, w.segment_scope(s)), id);
    s.published = false;
}

void pin(World& w, std::uint32_t id) {
    ++w.segments[id].pins;
    refresh_evictable(w, id);
}

void unpin(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    KV_ASSERT(s.pins > 0, "unpin without a pin");
    --s.pins;
    refresh_evictable(w, id);
}

void relocate(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    KV_ASSERT(s.slot != kNone, "relocate of a non-resident segment");
    if (s.graph_refs > 0) ++w.moved_under_graph;
    const std::uint32_t fresh = take_slot(w, s.form);
    w.slots[fresh].owner = id;
    w.slots[fresh].content = w.slots[s.slot].content;
    give_back_slot(w, s.slot);
    s.slot = fresh;
    ++s.epoch;
}

std::uint32_t allocate_disk(World& w, std::uint32_t owner) {
    std::uint32_t id;
    if (!w.free_disk.empty()) {
        id = w.free_disk.back();
        w.free_disk.pop_back();
    } else {
        id = static_cast<std::uint32_t>(w.disk.size());
        w.disk.emplace_back();
    }
    w.disk[id].owner = owner;
    w.disk[id].content = 0;
    return id;
}

void free_disk(World& w, std::uint32_t id) {
    if (w.disk[id].on_host != 0) leave_host(w, id);
    w.disk[id].owner = kNone;
    w.disk[id].content = 0;
    w.free_disk.push_back(id);
}

std::uint32_t place_copy(World& w, std::uint32_t id) {
    const std::uint64_t bytes = w.bytes_of(w.segments[w.disk[id].owner]);
    const std::uint64_t capacity = w.limits.host_capacity_bytes;
    if (capacity == 0 || bytes > capacity) return 0;
    std::uint32_t moved = 0;
    for (; w.host_used_bytes + bytes > capacity; ++moved) leave_host(w, w.host_head);
    host_link_after(w, id, w.host_tail);
    w.host_used_bytes += bytes;
    return moved;
}

}  // namespace kvcheck::model
