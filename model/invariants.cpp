// Invariant predicates. Read-time checks judge each planned read against the ground truth (what
// the world really holds), never against what the policy believed; structural checks walk the
// whole state table and are enabled by explorers, property tests and debug runs.
#include "model/invariants.hpp"

#include <algorithm>

#include "model/core.hpp"
#include "model/match.hpp"
#include "model/walk.hpp"

namespace kvcheck::model {

namespace {

struct Range {
    std::uint8_t group;
    std::uint32_t start;
    std::uint32_t end;
};

// What group g must hold to resume at len tokens, by the group's own form semantics.
void required_ranges(const World& w, std::uint8_t g, std::uint32_t len, std::vector<Range>& out) {
    if (len == 0) return;
    const CacheGroup& grp = w.group(g);
    const std::uint32_t block = grp.block_tokens;
    const std::uint32_t end = len / block * block;
    auto blocks = [&](std::uint32_t from) {
        for (std::uint32_t x = from / block * block; x < end; x += block) out.push_back({g, x, x + block});
    };
    switch (grp.kind) {
        case GroupKind::full: {
            const std::uint32_t boundary = len / grp.segment_tokens * grp.segment_tokens;
            if (grp.segment_tokens == block) return blocks(0);
            for (std::uint32_t x = 0; x < boundary; x += grp.segment_tokens)
                out.push_back({g, x, x + grp.segment_tokens});
            return blocks(boundary);
        }
        case GroupKind::swa: return blocks(len > grp.window_tokens ? len - grp.window_tokens : 0);
        case GroupKind::chunked: return blocks(len / grp.window_tokens * grp.window_tokens);
        case GroupKind::indexer: return blocks(0);
        case GroupKind::linear: out.push_back({g, 0, len}); return;
    }
}

std::string entry_text(const World& w, std::uint32_t r, const PlanEntry& e) {
    return request_name(w, r) + " group " + w.group(e.group).name + " " + std::string(form_name(e.form)) + " [" +
           std::to_string(e.start) + "," + std::to_string(e.end) + ")" +
           (e.segment == kNone ? std::string(" (nothing registered)") : " segment " + std::to_string(e.segment));
}

}  // namespace

std::string mismatch_cause(const ReadFact& f) {
    if (!f.present) return "nothing was registered for this range";
    if (!f.epoch_ok) return "the segment changed after validation (evicted, moved or reloaded)";
    if (!f.resident) return "the segment was registered but not resident";
    if (!f.layout_ok) return "the segment is in another kernel layout";
    if (!f.aligned) return "the block address is misaligned";
    if (!f.whole) return "the segment is missing blocks";
    if (!f.index_ok) return "the index was built over another KV version";
    return "the stored content belongs to another version, position or an unfinished write";
}

bool corrupts_output(const std::string& invariant) {
    return invariant == "OR1_ground_truth" || invariant == "VL1_lcm_boundary" ||
           invariant == "VL3_group_intersection" || invariant == "FM2_tail_boundary" || invariant == "FM3_swa_window";
}

namespace {

void check_read(const World& w, std::uint32_t r, const std::vector<ReadFact>& facts, std::vector<Violation>& out) {
    const Request& q = w.requests[r];
    const std::uint32_t len = q.resume_len;
    auto fail_at = [&](const char* name, const PlanEntry& e, std::string detail) {
        std::string message = entry_text(w, r, e) + " " + detail;
        out.push_back({name, std::move(message), e, std::move(detail)});
    };
    if (len % w.derived.lcm_tokens != 0) {
        std::string detail = "resumes at " + std::to_string(len) +
                             " tokens, not a multiple of the LCM block boundary " +
                             std::to_string(w.derived.lcm_tokens);
        std::string message = request_name(w, r) + " " + detail;
        out.push_back({"VL1_lcm_boundary", std::move(message), std::nullopt, std::move(detail)});
    }
    std::vector<Range> need;
    for (std::uint8_t g = 0; g < w.config->groups.size(); ++g) required_ranges(w, g, len, need);
    for (const Range& n : need) {
        // A read covers a required range when it reads an entry over it (one piece of an extent
        // may cover many ranges) and, for a shed SWA entry, still holds those blocks.
        const bool covered = std::any_of(facts.begin(), facts.end(), [&](const ReadFact& f) {
            return f.present && f.entry.group == n.group && f.entry.start <= n.start && n.end <= f.entry.end &&
                   (!f.epoch_ok || units_retained(w, w.segments[f.entry.segment], n.start, n.end));
        });
        if (!covered) {
            const CacheGroup& grp = w.group(n.group);
            const bool window = grp.kind == GroupKind::swa || grp.kind == GroupKind::chunked;
            const bool tail = grp.kind == GroupKind::full && grp.segment_tokens != grp.block_tokens &&
                              n.start >= len / grp.segment_tokens * grp.segment_tokens;
            const PlanEntry missing{
                kNone, 0, kNone, n.start, n.end, n.group, tail ? Form::uncompressed_tail : primary_form(grp)};
            out.push_back({window ? "FM3_swa_window" : "VL3_group_intersection",
                           request_name(w, r) + " resumes at " + std::to_string(len) + " but group " + grp.name +
                               " has nothing resumable for [" + std::to_string(n.start) + "," + std::to_string(n.end) +
                               ")",
                           missing, "has nothing resumable for resume point " + std::to_string(len)});
            if (window)
                out.push_back(
                    {"VL3_group_intersection",
                     "group " + grp.name + " cannot resume at " + std::to_string(len) + " for " + request_name(w, r),
                     missing, "cannot resume at " + std::to_string(len) + ": the window lacks this range"});
        }
    }
    for (const ReadFact& f : facts) {
        const PlanEntry& e = f.entry;
        if (e.end > len && w.group(e.group).kind != GroupKind::linear)
            fail_at("VL3_group_intersection", e, "reads past the common resume point " + std::to_string(len));
        if (f.present && !f.epoch_ok)
            fail_at("RL3_toctou", e,
                    "is read although its epoch changed since validation (" + std::to_string(e.epoch) + " -> " +
                        std::to_string(w.segments[e.segment].epoch) + ")");
        if (f.present && q.config_epoch_at_lookup != w.config_epoch)
            fail_at("RL3_toctou", e, "is read although the model config changed since validation");
        if (f.present && f.epoch_ok && !f.resident)
            fail_at("FM5_resident", e,
                    "is read while registered but not resident (stage " +
                        std::string(stage_name(w.segments[e.segment].stage)) + ")");
        // Layout and index judge the segment the plan named; once its epoch moved on (its id may
        // even belong to another segment now) RL3 is what that read breaks.
        if (f.present && f.epoch_ok && !f.layout_ok) fail_at("VL2_layout", e, "is read by a kernel of another layout");
        if (f.resident && !f.aligned) fail_at("VL4_alignment", e, "is read at a misaligned address");
        if (f.present && f.epoch_ok && !f.whole) fail_at("FM1_segment_whole", e, "is read with blocks missing");
        if (f.present && f.epoch_ok && !f.index_ok)
            fail_at("FM4_index_version", e, "routes over a KV version it was not built for");
        if (e.form == Form::uncompressed_tail && f.present) {
            // A tail block is anchored at the boundary below its start (World::anchor_of), so one
            // that starts at or after the resume point's boundary, and ends by the resume point
            // (VL3), continues that boundary; a gap between the boundary and the tail is VL3's.
            const CacheGroup& grp = w.group(e.group);
            const std::uint32_t boundary = len / grp.segment_tokens * grp.segment_tokens;
            if (e.start < boundary)
                fail_at("FM2_tail_boundary", e,
                        "starts before the compression boundary " + std::to_string(boundary) +
                            " of the resume point: whole compressed segments end there");
            for (std::uint32_t x = 0; x < boundary; x += grp.segment_tokens) {
                const bool have = std::any_of(facts.begin(), facts.end(), [&](const ReadFact& o) {
                    return o.present && o.entry.group == e.group && o.entry.form == Form::compressed_kv &&
                           o.entry.start <= x && x < o.entry.end;
                });
                if (!have) {
                    fail_at("FM2_tail_boundary", e,
                            "follows a gap: no compressed segment for [" + std::to_string(x) + "," +
                                std::to_string(x + grp.segment_tokens) + ")");
                    break;
                }
            }
        }
        if (f.expected != f.actual)
            fail_at("OR1_ground_truth", e, "holds content that differs from the ground truth: " + mismatch_cause(f));
        // The entry the plan validated (once its epoch moved on, RL3 is what that read breaks).
        if (f.present && f.epoch_ok && w.rollout == Rollout::off)
            fail_at("RO1_rollout_scope", e, "is read although rollout is off (no prefix reuse)");
        if (f.present && f.epoch_ok && w.rollout == Rollout::intra_request &&
            w.owner_scope(w.segments[e.segment]) != q.spec->reuse_scope)
            fail_at("RO1_rollout_scope", e,
                    "was written by request " + std::to_string(w.owner_uid(w.segments[e.segment])) +
                        ", outside the reader's reuse scope (rollout intra-request)");
    }
}

// check_structure fetches index cells this many segment ids ahead, once the index has more cells
// than fit in a core's nearest caches (explorers' small worlds skip the extra hashing).
constexpr std::uint32_t kCheckAhead = 16;
constexpr std::size_t kFetchAheadCells = 1 << 14;

bool writer_kept(const World& w, const Segment& s) {
    return s.writer < w.writers.size() && w.writers[s.writer].spec != nullptr;
}

void check_structure(const World& w, Scratch& scratch, std::vector<Violation>& out) {
    auto fail = [&](const char* name, std::string msg) { out.push_back({name, std::move(msg)}); };
    // Explorers run this on every new state, so a slot's name is built only when a check fails.
    auto slot_name = [&](std::uint32_t id) {
        return "slot " + std::to_string(id) + " of the " + std::string(form_name(w.slots[id].pool)) + " pool";
    };
    // RL2: every slot is owned by one live segment of its own form, or free in exactly its pool's list.
    // Counters reused call after call (explorers check millions of small states), in the
    // driver's scratch.
    std::vector<std::uint32_t>& listed = scratch.listed;
    std::vector<std::uint32_t>& pins = scratch.pins;  // holds per segment id
    listed.assign(w.slots.size(), 0);
    pins.assign(w.segments.size(), 0);
    for (int f = 0; f < kFormCount; ++f)
        for (std::uint32_t id : w.free_slots[f]) {
            ++listed[id];
            if (w.slots[id].pool != static_cast<Form>(f))
                fail("RL2_form_separation", "slot " + std::to_string(id) + " sits in the free list of another form");
        }
    for (std::uint32_t id : w.shared_free_slots) ++listed[id];
    for (std::uint32_t id = 0; id < w.slots.size(); ++id) {
        const Slot& s = w.slots[id];
        if (s.owner == kNone) {
            if (listed[id] != 1)
                fail("RL2_form_separation",
                     slot_name(id) + " is free but in " + std::to_string(listed[id]) + " free lists");
            if (s.label != kNoLabel)
                fail("RL2_form_separation", slot_name(id) + " is free but still carries the form label " +
                                                std::string(form_name(static_cast<Form>(s.label))));
        } else {
            const Segment& seg = w.segments[s.owner];
            if (listed[id] != 0) fail("RL2_form_separation", slot_name(id) + " is owned and free at once");
            if (!seg.live || seg.slot != id)
                fail("ST1_state_table", slot_name(id) + " is owned by a segment that does not hold it");
            else if (seg.form != s.pool)
                fail("RL2_form_separation",
                     slot_name(id) + " holds a " + std::string(form_name(seg.form)) + " segment");
        }
    }
    // ST1: the index and the state table agree; the byte accounting adds up.
    std::uint64_t used = 0;
    std::uint64_t disk_used = 0;
    std::uint32_t live = 0;
    std::uint32_t tier_members = 0;
    std::uint64_t host_used = 0;
    std::uint32_t host_members = 0;
    // In a large index each lookup below misses the cache: fetch the cell kCheckAhead ids ahead.
    const bool fetch_ahead = w.index.cells() > kFetchAheadCells;
    for (std::uint32_t id = 0; id < w.segments.size(); ++id) {
        if (fetch_ahead && id + kCheckAhead < w.segments.size()) {
            const Segment& ahead = w.segments[id + kCheckAhead];
            if (ahead.live && ahead.published && writer_kept(w, ahead))
                w.prefetch(ahead.key, ahead.group, ahead.is_tail, w.segment_scope(ahead));
        }
        const Segment& s = w.segments[id];
        if (!s.live) continue;
        ++live;
        used += kStateEntryBytes + (s.slot != kNone ? w.bytes_of(s) : 0);
        if (s.disk != kNone) disk_used += w.bytes_of(s);
        if (w.copy_on_host(s)) {
            host_used += w.bytes_of(s);
            ++host_members;
        }
        const bool tier_listed = w.limits.tier_eviction && s.stage == Stage::on_disk && s.pins == 0;
        if ((s.in_lru && s.slot == kNone) != tier_listed) {
            fail("ST1_state_table", "segment " + std::to_string(id) +
                                        (tier_listed ? " is missing from" : " wrongly sits in") +
                                        " the host/disk tier's eviction list");
        }
        tier_members += s.in_lru && s.slot == kNone ? 1 : 0;
        // The index partition is the writer's (World::segment_scope), so the writer comes first.
        if (!writer_kept(w, s))
            fail("ST1_state_table", "segment " + std::to_string(id) + " names a writer that is no longer kept");
        else if (s.published && w.find(s.key, s.group, s.is_tail, w.segment_scope(s)) != id)
            fail("ST1_state_table",
                 "segment " + std::to_string(id) + " is marked published but the index points elsewhere");
    }
    w.index.for_each([&](std::uint64_t, std::uint32_t id) {
        if (id >= w.segments.size() || !w.segments[id].live || !w.segments[id].published)
            fail("ST1_state_table",
                 "the prefix index points at segment " + std::to_string(id) + ", which is not a live published entry");
    });
    if (live != w.live_segments) fail("ST1_state_table", "live segment count drifted");
    if (used != w.gpu_used_bytes)
        fail("ST1_state_table", "GPU bytes in use drifted: counted " + std::to_string(w.gpu_used_bytes) + ", actual " +
                                    std::to_string(used));
    // A pool's bytes in use against what its members add up to, and against its capacity.
    const auto check_pool = [&](const char* pool, std::uint64_t counted, std::uint64_t actual, std::uint64_t capacity) {
        if (counted != actual)
            fail("ST1_state_table", std::string(pool) + " bytes in use drifted: counted " + std::to_string(counted) +
                                        ", actual " + std::to_string(actual));
        if (counted > capacity)
            fail("ST1_state_table", std::string(pool) + " holds " + std::to_string(counted) +
                                        " bytes, over its capacity " + std::to_string(capacity));
    };
    check_pool("the host/disk tier", w.disk_used_bytes, disk_used, w.limits.disk_capacity_bytes);
    check_pool("host memory", w.host_used_bytes, host_used, w.limits.host_capacity_bytes);
    std::uint32_t walked = 0;
    for (std::uint32_t id = w.disk_lru_head, prev = kNone; id != kNone && walked <= tier_members;
         id = w.segments[id].lru_next) {
        if (!w.segments[id].in_lru || w.segments[id].slot != kNone || w.segments[id].lru_prev != prev) break;
        prev = id;
        ++walked;
    }
    if (walked != tier_members)
        fail("ST1_state_table", "the host/disk tier's eviction list links " + std::to_string(walked) + " of its " +
                                    std::to_string(tier_members) + " entries");
    walked = 0;
    for (std::uint32_t d = w.host_head, prev = kNone; d != kNone && walked <= host_members; d = w.disk[d].host_next) {
        const DiskObject& copy = w.disk[d];
        if (copy.on_host == 0 || copy.host_prev != prev || copy.owner >= w.segments.size() ||
            w.segments[copy.owner].disk != d)
            break;
        prev = d;
        ++walked;
    }
    if (walked != host_members)
        fail("ST1_state_table", "host memory's list links " + std::to_string(walked) + " of the " +
                                    std::to_string(host_members) + " copies resting there");
    // ST1: a live load names no request (it stopped waiting) or one that waits on it, and a
    // request's pending loads are the live loads that name it.
    std::vector<std::uint32_t>& loads = scratch.loads;  // live loads per request
    loads.assign(w.requests.size(), 0);
    for (std::uint32_t i = 0; i < w.io.size(); ++i) {
        const IoOp& op = w.io[i];
        if (!op.live || op.kind != IoKind::load || op.request == kNone) continue;
        if (op.request >= w.requests.size() || w.requests[op.request].phase != Phase::waiting_io)
            fail("ST1_state_table",
                 "load " + std::to_string(i) + " names " + request_name(w, op.request) + ", which does not wait on it");
        else
            ++loads[op.request];
    }
    for (std::uint32_t r = 0; r < w.requests.size(); ++r)
        if (w.requests[r].pending_loads != loads[r])
            fail("ST1_state_table", request_name(w, r) + " waits on " + std::to_string(w.requests[r].pending_loads) +
                                        " loads but " + std::to_string(loads[r]) + " are in flight for it");
    // ST2: pins are exactly the holds requests keep.
    for (const Request& q : w.requests)
        for (std::uint32_t id : q.pinned) {
            KV_ASSERT(id < pins.size(), "a request pins a segment id past the state table");
            ++pins[id];
        }
    for (std::uint32_t id = 0; id < w.segments.size(); ++id) {
        const std::uint32_t held = pins[id];
        if (w.segments[id].live && w.segments[id].pins != held)
            fail("ST2_pins", "segment " + std::to_string(id) + " has " + std::to_string(w.segments[id].pins) +
                                 " pins but requests hold " + std::to_string(held));
    }
    // RL4, full form: every live graph's addresses still hold the segment it captured.
    for (std::uint32_t r = 0; r < w.graphs.size(); ++r) {
        if (!w.graphs[r].live) continue;
        for (const GraphRef& ref : w.graphs[r].refs) {
            const Segment& s = w.segments[ref.segment];
            if (!s.live || s.slot != ref.slot || w.slots[ref.slot].address != ref.address)
                fail("RL4_graph_topology", "the graph captured for " + request_name(w, r) + " references segment " +
                                               std::to_string(ref.segment) +
                                               " at an address that has moved or been freed");
        }
    }
}

}  // namespace

namespace {

// The KV segment an index entry routes over: the one this read takes for the entry's first
// block (an index is judged against the KV actually read), else what the prefix index publishes
// for it now.
std::uint32_t indexed_kv(const World& w, const Request& q, const PlanEntry& e) {
    const auto kv_group = static_cast<std::uint8_t>(w.group(e.group).indexed_group);
    for (const PlanEntry& other : q.plan)
        if (other.group == kv_group && other.start <= e.start && e.start < other.end && other.segment != kNone &&
            w.segments[other.segment].live)
            return other.segment;
    return covering_entry(w, *q.spec, kv_group, e.start + w.group(e.group).block_tokens);
}

}  // namespace

std::vector<ReadFact> read_facts(const World& w, std::uint32_t r) {
    std::vector<ReadFact> facts;
    read_facts_into(w, r, facts);
    return facts;
}

void read_facts_into(const World& w, std::uint32_t r, std::vector<ReadFact>& facts) {
    const Request& q = w.requests[r];
    const RequestSpec& spec = *q.spec;
    facts.clear();
    facts.reserve(q.plan.size());
    for (const PlanEntry& e : q.plan) {
        ReadFact f;
        f.entry = e;
        const CacheGroup& grp = w.group(e.group);
        f.present = e.segment != kNone;
        if (e.slot != kNone) {
            const Slot& slot = w.slots[e.slot];
            // Part of the extent the plan names, while that extent still holds the slot; anything
            // else reads whatever the slot holds.
            const Segment* holder = slot.owner == e.segment && e.segment != kNone ? &w.segments[e.segment] : nullptr;
            const bool piece = holder != nullptr && holder->live && holder->form != Form::linear_state &&
                               w.start_of(*holder) <= e.start && e.end <= holder->end;
            const std::uint64_t content = piece ? part_tag(w, *holder, slot.content, e.start, e.end) : slot.content;
            f.aligned = slot.address % kAlignBytes == 0;
            f.actual = f.aligned ? content : hash_combine(content, slot.address);
        }
        if (f.present) {
            const Segment& s = w.segments[e.segment];
            f.epoch_ok = s.live && s.epoch == e.epoch && w.holds_range(s, e.start, e.end);
            f.resident = s.live && s.slot != kNone && s.slot == e.slot &&
                         (s.stage == Stage::ready || s.stage == Stage::offloading || s.stage == Stage::evicting);
            f.layout_ok = s.layout_id == w.current_layout(e.group);
            f.whole = s.whole && s.stage != Stage::evicting;
            if (grp.kind == GroupKind::indexer) {
                const std::uint32_t kv = indexed_kv(w, q, e);
                f.index_ok = kv != kNone && w.segments[kv].data_version() == s.indexed_version();
            }
        }
        if (grp.kind == GroupKind::linear) {
            f.expected = truth_tag(w, spec, e.group, 0, e.end);
        } else {
            const std::uint64_t base = truth_tag(w, spec, e.group, e.start, e.end);
            if (e.form == Form::uncompressed_tail) {
                f.expected = hash_combine(base, q.resume_len / grp.segment_tokens * grp.segment_tokens) | 1;
            } else if (grp.kind == GroupKind::indexer) {
                const std::uint32_t kv = indexed_kv(w, q, e);
                f.expected = hash_combine(base, kv == kNone ? 0 : w.segments[kv].data_version()) | 1;
            } else {
                f.expected = base;
            }
        }
        facts.push_back(f);
    }
}

const std::vector<InvariantInfo>& invariant_catalogue() {
    static const std::vector<InvariantInfo> kAll = {
        {"RL1_admission_cap", "all resident forms plus the state table stay within the GPU budget"},
        {"RL2_form_separation",
         "one free list per form; a free block carries no form label and sits in exactly one list"},
        {"RL3_toctou", "no read of a segment whose epoch changed since it was validated"},
        {"RL4_graph_topology", "no address referenced by a live captured graph moves or is freed without recapture"},
        {"VL1_lcm_boundary", "every resume length lies on the LCM of all groups' block sizes"},
        {"VL2_layout", "every segment read is in the reading kernel's layout"},
        {"VL3_group_intersection", "every group is resumable at the common resume point and none reads past it"},
        {"VL4_alignment", "every block read sits at an aligned address"},
        {"FM1_segment_whole", "a compressed segment is read only when every block of it is intact"},
        {"FM2_tail_boundary", "a tail read starts exactly at the compression boundary after whole segments"},
        {"FM3_swa_window", "a window read covers [pos-W, pos) with blocks that are live now"},
        {"FM4_index_version", "an index read was built over the KV version being read"},
        {"FM5_resident", "a segment read is resident on the GPU, not just registered"},
        {"OR1_ground_truth", "every resume reads content equal to the ground truth"},
        {"RO1_rollout_scope", "no resume reads an entry outside the rollout mode's reuse scope (off: none; "
                              "intra-request: the request's own and its sampled answers')"},
        {"ST1_state_table", "the prefix index, slots and byte accounting agree with the state table"},
        {"ST2_pins", "pin counts equal the holds requests keep"},
    };
    return kAll;
}

bool is_invariant(std::string_view name) {
    for (const InvariantInfo& info : invariant_catalogue())
        if (info.name == name) return true;
    return false;
}

std::string invariant_names() {
    std::string out;
    for (const InvariantInfo& info : invariant_catalogue()) out += (out.empty() ? "" : ", ") + std::string(info.name);
    return out;
}

void check_invariants(const World& w, const StepOutcome& outcome, const std::vector<ReadFact>& facts, bool structural,
                      Scratch& scratch, std::vector<Violation>& out) {
    if (w.gpu_used_bytes > w.limits.gpu_budget_bytes)
        out.push_back({"RL1_admission_cap", "GPU bytes in use " + std::to_string(w.gpu_used_bytes) +
                                                " exceed the budget " + std::to_string(w.limits.gpu_budget_bytes)});
    if (w.cross_form_reuse > 0)
        out.push_back({"RL2_form_separation", "a block of one form's pool was handed out for another form"});
    if (w.moved_under_graph > 0 || outcome.graph_moved)
        out.push_back({"RL4_graph_topology",
                       "a segment referenced by a live captured graph was moved or freed without recapture"});
    if (outcome.read_request != kNone) check_read(w, outcome.read_request, facts, out);
    if (structural) check_structure(w, scratch, out);
}

}  // namespace kvcheck::model
