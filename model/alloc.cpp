// Allocation and reclamation paths. Each form has its own free list; the `shared-freelist` mutant
// sends every form through one list and forgets to clear labels, which RL2 then catches.
#include "model/alloc.hpp"

#include <algorithm>

#include "model/core.hpp"

namespace kvcheck::model {

namespace {

// Eviction order: expired windows and rolling tails are cheapest to lose, recurrent checkpoints
// and compressed segments (whole-or-nothing, costly to recompute) the dearest.
constexpr std::array<Form, 5> kEvictionOrder = {Form::swa_window, Form::uncompressed_tail, Form::indexer_state,
                                                Form::compressed_kv, Form::linear_state};

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

std::uint64_t entry_cost(const World& w, std::uint8_t group, std::uint32_t start, std::uint32_t end) {
    return segment_bytes(w.config->groups[group], end - start);
}

// Makes room for `bytes` more on the GPU. Returns false when nothing more can be evicted.
bool make_room(World& w, std::uint64_t bytes, AdmissionLog* log) {
    if (!w.defenses.admission_cap) return true;
    while (w.gpu_used_bytes + bytes > w.limits.gpu_budget_bytes) {
        std::uint32_t victim = kNone;
        for (Form f : kEvictionOrder) {
            auto& set = w.evictable[static_cast<int>(f)];
            if (!set.empty()) {
                victim = set.begin()->second;
                break;
            }
        }
        if (victim == kNone) return false;
        if (log != nullptr) log->evicted.push_back({w.segments[victim].form, w.bytes_of(w.segments[victim])});
        free_segment(w, victim);
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

void refresh_evictable(World& w, std::uint32_t id) {
    const Segment& s = w.segments[id];
    auto& set = w.evictable[static_cast<int>(s.form)];
    // last_use is the set key, so callers refresh before changing it (touch() does).
    if (is_evictable(w, s)) set.insert({s.last_use, id});
    else set.erase({s.last_use, id});
}

void touch(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    w.evictable[static_cast<int>(s.form)].erase({s.last_use, id});
    s.last_use = ++w.tick;
    refresh_evictable(w, id);
}

std::uint32_t create_segment(World& w, std::uint8_t group, Form form, std::uint32_t start, std::uint32_t end,
                             std::uint64_t key, std::uint32_t owner, AdmissionLog* log) {
    const std::uint64_t bytes = entry_cost(w, group, start, end);
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
    s.start = start;
    s.end = end;
    s.group = group;
    s.form = form;
    s.is_tail = form == Form::uncompressed_tail;
    s.stage = Stage::writing;
    s.kv_version = w.kv_version;
    s.layout_id = w.current_layout(group);
    s.owner = owner;
    s.live = true;
    s.last_use = ++w.tick;
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
    w.evictable[static_cast<int>(s.form)].erase({s.last_use, id});
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
    release_slot(w, id);
    if (s.disk != kNone) {
        free_disk(w, s.disk);
        w.disk_used_bytes -= w.bytes_of(s);
        w.bytes_by_form[static_cast<int>(Form::on_disk_prefix)] -= w.bytes_of(s);
        s.disk = kNone;
    }
    s.live = false;
    s.stage = Stage::freed;
    ++s.epoch;
    --w.live_segments;
    w.gpu_used_bytes -= kStateEntryBytes;
    w.free_segment_ids.push_back(id);
}

void publish(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    if (s.published) return;
    // A newer segment for the same prefix replaces the older one in the index.
    const auto [it, inserted] = w.index.try_emplace(w.index_key(s.key, s.group, s.is_tail), id);
    if (!inserted) {
        w.segments[it->second].published = false;
        it->second = id;
    }
    s.published = true;
}

void unpublish(World& w, std::uint32_t id) {
    Segment& s = w.segments[id];
    if (!s.published) return;
    const auto it = w.index.find(w.index_key(s.key, s.group, s.is_tail));
    if (it != w.index.end() && it->second == id) w.index.erase(it);
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
    w.disk[id].owner = kNone;
    w.disk[id].content = 0;
    w.free_disk.push_back(id);
}

}  // namespace kvcheck::model
