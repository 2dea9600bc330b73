// Offloads and loads: an I/O operation per transfer, in the lowest free I/O slot, completed or
// failed by the I/O steps.
#include "model/transfer.hpp"

#include <algorithm>

#include "model/core.hpp"
#include "model/walk.hpp"

namespace kvcheck::model {

namespace {

std::uint32_t add_io(World& w, const IoOp& op) {
    // The lowest free slot, so that ids stay canonical for the explorer's hashing.
    for (std::size_t word = w.free_io_low; word < w.free_io.size(); ++word) {
        std::uint64_t& bits = w.free_io[word];
        if (bits == 0) continue;
        w.free_io_low = word;
        const auto id = static_cast<std::uint32_t>(word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
        bits &= bits - 1;
        KV_ASSERT(!w.io[id].live, "a free I/O slot holds a live operation");
        w.io[id] = op;
        return id;
    }
    w.free_io_low = w.free_io.size();
    w.io.push_back(op);
    return static_cast<std::uint32_t>(w.io.size() - 1);
}

}  // namespace

std::uint8_t indexer_of(const World& w, std::uint8_t kv_group) {
    for (std::size_t g = 0; g < w.config->groups.size(); ++g)
        if (w.config->groups[g].kind == GroupKind::indexer && w.config->groups[g].indexed_group == kv_group)
            return static_cast<std::uint8_t>(g);
    return 0xFF;
}

void start_offload(World& w, std::uint32_t id, StepOutcome& out) {
    const std::uint64_t bytes = w.bytes_of(w.segments[id]);
    make_tier_room(w, bytes, out.evicted);
    Segment& s = w.segments[id];
    s.disk = allocate_disk(w, id);
    out.demotions += place_copy(w, s.disk);
    w.disk_used_bytes += bytes;
    w.bytes_by_form[static_cast<int>(Form::on_disk_prefix)] += bytes;
    s.stage = Stage::offloading;
    refresh_evictable(w, id);
    out.io_started.push_back(add_io(w, {id, kNone, IoKind::offload, true}));
}

bool start_load(World& w, std::uint32_t r, std::uint32_t id, StepOutcome& out) {
    Segment& s = w.segments[id];
    if (s.stage != Stage::on_disk) return false;
    AdmissionLog log;
    if (!admit_slot(w, id, &log)) {
        out.admission_refused = true;
        return false;
    }
    out.evicted.insert(out.evicted.end(), log.evicted.begin(), log.evicted.end());
    s.stage = Stage::loading;
    out.io_started.push_back(add_io(w, {id, r, IoKind::load, true}));
    return true;
}

void finish_io(World& w, std::uint32_t op_id, IoEnd end, StepOutcome& out) {
    KV_ASSERT((end != IoEnd::misaligned && end != IoEnd::partial) || w.io[op_id].kind == IoKind::load,
              "only a load lands in a staging buffer or arrives in part");
    // The length check compares the bytes that arrived with the segment's size: a short load is
    // then a failed one.
    const bool ok = end != IoEnd::failed && (end != IoEnd::partial || !w.defenses.load_length_check);
    IoOp& op = w.io[op_id];
    Segment& s = w.segments[op.segment];
    op.live = false;
    const std::size_t word = op_id / 64;
    if (w.free_io.size() <= word) w.free_io.resize(word + 1, 0);
    w.free_io[word] |= std::uint64_t{1} << (op_id % 64);
    w.free_io_low = std::min(w.free_io_low, word);
    const std::uint64_t bytes = w.bytes_of(s);
    if (op.kind == IoKind::offload) {
        if (ok) {
            w.disk[s.disk].content = w.slots[s.slot].content;
            if (s.pins > 0 || (s.graph_refs > 0 && w.defenses.graph_guard)) {
                // Pinned while the copy ran: the GPU copy stays, the disk copy is kept beside it.
                s.stage = Stage::ready;
                refresh_evictable(w, op.segment);
            } else {
                release_slot(w, op.segment);
                out.residency.push_back(
                    {Residency::Kind::offloaded, op.segment, kNone, static_cast<std::uint32_t>(out.evicted.size())});
                s.stage = Stage::on_disk;
                ++s.epoch;
                refresh_evictable(w, op.segment);
            }
        } else {
            free_disk(w, s.disk);
            w.disk_used_bytes -= bytes;
            w.bytes_by_form[static_cast<int>(Form::on_disk_prefix)] -= bytes;
            s.disk = kNone;
            s.stage = Stage::ready;
            refresh_evictable(w, op.segment);
        }
        return;
    }
    // A load whose request stopped waiting (stop_waiting) lands for whoever reads the entry next.
    Request* q = op.request != kNone ? &w.requests[op.request] : nullptr;
    if (ok) {
        w.slots[s.slot].content = w.disk[s.disk].content;
        if (end == IoEnd::misaligned) w.slots[s.slot].address += 64;
        // Mutant `trust-partial-load`: the slot's tail never arrived, so it holds stale bytes
        // there (a tag of its own, which no later load restores).
        if (end == IoEnd::partial) w.slots[s.slot].content = hash_combine(w.slots[s.slot].content, 0x8);
        free_disk(w, s.disk);
        w.disk_used_bytes -= bytes;
        w.bytes_by_form[static_cast<int>(Form::on_disk_prefix)] -= bytes;
        s.disk = kNone;
        s.stage = Stage::ready;
        ++s.epoch;
        touch(w, op.segment);
        out.residency.push_back(
            {Residency::Kind::loaded, op.segment, kNone, static_cast<std::uint32_t>(out.evicted.size())});
        const std::uint8_t ig = indexer_of(w, s.group);
        if (!w.defenses.restore_index_with_kv && ig != 0xFF) {
            // Mutant `kv-without-index`: the indexer pages come back as empty pages that claim to
            // index this KV.
            const std::uint32_t partner =
                covering_entry(w, w.writer_spec(s), ig, w.start_of(s) + w.group(ig).block_tokens);
            if (partner != kNone && w.segments[partner].stage == Stage::on_disk && admit_slot(w, partner, nullptr)) {
                Segment& p = w.segments[partner];
                free_disk(w, p.disk);
                w.disk_used_bytes -= w.bytes_of(p);
                w.bytes_by_form[static_cast<int>(Form::on_disk_prefix)] -= w.bytes_of(p);
                p.disk = kNone;
                p.stage = Stage::ready;
                p.set_indexed_version(w.segments[op.segment].data_version());
                ++p.epoch;
                touch(w, partner);
                out.residency.push_back(
                    {Residency::Kind::loaded, partner, kNone, static_cast<std::uint32_t>(out.evicted.size())});
            }
        }
    } else {
        release_slot(w, op.segment);
        s.stage = Stage::on_disk;
        refresh_evictable(w, op.segment);
        if (q != nullptr) q->load_failed = true;
    }
    if (q != nullptr && q->pending_loads > 0 && --q->pending_loads == 0 && q->phase == Phase::waiting_io)
        q->phase = Phase::io_done;
}

}  // namespace kvcheck::model
