// Lookup with validation. Each group has a "reach": the longest length at which its form is
// resumable now; the usable length is a fixed point of the reaches (an intersection, never a max),
// taken on the LCM grain (VL1). Broken policies switch single checks off here or in steps.cpp.
#include "model/match.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "model/core.hpp"
#include "model/walk.hpp"

namespace kvcheck::model {

namespace {

// How many index cells check_blocks fetches ahead; a failed check stops early, so more is waste.
constexpr std::uint32_t kPrefetchBatch = 8;

// A Miss without its tokens, so that a Check fits in eight bytes.
struct Why {
    std::uint8_t group;
    Form form;
    MissReason reason;
};

struct Check {
    bool ok = true;
    Why miss{};
    std::uint32_t at = 0;  // when not ok: the first token it could not take
};

constexpr std::uint32_t kUnknown = kNone - 1;  // segment ids never come near it
struct FindGroup {
    std::size_t first;  // its first entry in answers_
    std::uint32_t blocks;
    std::uint32_t block_tokens;
    std::size_t first_chunk;  // its first entry in walks_
    std::uint32_t chunk_tokens;
    std::uint32_t chunks;  // 0 for a group of single units
};
struct Answer {
    std::uint32_t id;     // the index's answer, kUnknown until asked
    std::uint32_t until;  // for an extent: how far it covers this request, kUnknown until asked
};
// model::covering's walk from a chunk's start, as far as it has gone: the entries it met, in
// order (pieces_[first, first + count), room reserved for every piece the chunk can hold),
// where it stands and what it found there.
struct Walk {
    std::uint32_t first;  // kUnknown until started
    std::uint32_t count;
    std::uint32_t at;
    Hit hit;
};
struct Piece {
    std::uint32_t from;
    std::uint32_t until;
    std::uint32_t id;
};

}  // namespace

// One lookup's remembered answers (PrefixFinds below), kept in the driver's Scratch.
struct Scratch::Match {
    std::vector<FindGroup> groups;
    std::vector<Answer> answers;
    std::vector<Walk> walks;
    std::vector<Piece> pieces;
};

Scratch::Scratch() = default;
Scratch::~Scratch() = default;
Scratch::Scratch(Scratch&&) noexcept = default;
Scratch& Scratch::operator=(Scratch&&) noexcept = default;

Scratch::Match& Scratch::match() {
    if (!match_) match_ = std::make_unique<Match>();
    return *match_;
}

namespace {

// The prefix index's answers for one request's prefixes, remembered for the rest of one lookup.
// The world does not change during a lookup, yet the matcher asks for the same blocks several
// times (each group's reach, the plan, the pass that allows loads), and each fresh answer costs
// two key hashes and an index probe. Kept per group, tail flag and prefix length in the group's
// blocks; a length off the group's block grid or past the request is looked up every time.
// For an extent, how far it covers this request (matched_end) is remembered beside the answer.
class PrefixFinds {
public:
    // The answers live in the driver's scratch buffers, reused lookup after lookup.
    PrefixFinds(const World& world, const RequestSpec& spec, Scratch::Match& buffers)
        : w_(world), spec_(spec), scope_(world.index_scope(spec)), groups_(buffers.groups), answers_(buffers.answers),
          walks_(buffers.walks), pieces_(buffers.pieces) {
        const std::uint32_t tokens = spec.input_tokens + spec.output_tokens;
        groups_.clear();
        std::size_t total = 0;
        std::size_t chunks = 0;
        for (std::uint8_t g = 0; g < world.config->groups.size(); ++g) {
            const CacheGroup& grp = world.group(g);
            const std::uint32_t blocks = tokens / grp.block_tokens + 1;
            const std::uint32_t chunk_tokens = world.extent_units[g] * world.unit_tokens(g, primary_form(grp));
            const std::uint32_t group_chunks = world.extent_units[g] == 1 ? 0 : tokens / chunk_tokens + 1;
            groups_.push_back({total, blocks, grp.block_tokens, chunks, chunk_tokens, group_chunks});
            total += std::size_t{2} * blocks;
            chunks += group_chunks;
        }
        answers_.assign(total, {kUnknown, kUnknown});
        walks_.assign(chunks, {kUnknown, 0, 0, {}});
        pieces_.clear();
    }

    // World::find of the prefix [0, tokens) of this request.
    std::uint32_t find(std::uint32_t tokens, std::uint8_t g, bool tail) {
        Answer* known = remembered(tokens, g, tail);
        if (known == nullptr) return w_.find(spec_.key(tokens), g, tail, scope_);
        if (known->id == kUnknown) known->id = w_.find(spec_.key(tokens), g, tail, scope_);
        return known->id;
    }

    // The entry whose first unit starts at `start`, and how far it covers this request.
    Hit starting(std::uint8_t g, std::uint32_t start) {
        const std::uint32_t end = start + w_.unit_tokens(g, primary_form(w_.group(g)));
        const std::uint32_t id = find(end, g, false);
        if (id == kNone) return {};
        if (w_.segments[id].units() == 1) return {id, end};
        Answer* known = remembered(end, g, false);
        if (known == nullptr) return {id, matched_end(w_, spec_, w_.segments[id])};
        if (known->until == kUnknown) known->until = matched_end(w_, spec_, w_.segments[id]);
        return {id, known->until};
    }
    // model::covering, answered from the walk of x's chunk, taken once per lookup (the walk from a
    // chunk's start is the same whichever unit of it is asked for).
    Hit covering(std::uint8_t g, std::uint32_t x) {
        if (w_.extent_units[g] == 1) return starting(g, x);
        const FindGroup& grp = groups_[g];
        const std::uint32_t chunk = x / grp.chunk_tokens;
        if (chunk >= grp.chunks)
            return model::covering(w_, g, x,
                                   [this](std::uint8_t group, std::uint32_t s) { return starting(group, s); });
        Walk& walk = walks_[grp.first_chunk + chunk];
        if (walk.first == kUnknown) start_walk(g, chunk * grp.chunk_tokens, walk);
        for (std::uint32_t i = walk.first; i < walk.first + walk.count; ++i)
            if (pieces_[i].from <= x && x < pieces_[i].until) return {pieces_[i].id, pieces_[i].until};
        return extend_walk(g, x, walk);
    }
    Hit next_at(std::uint8_t g, std::uint32_t y) {
        return model::next_at(w_, g, y, [this](std::uint8_t group, std::uint32_t s) { return starting(group, s); });
    }

    // World::prefetch of the same cell, skipped when the answer is already known.
    void prefetch(std::uint32_t tokens, std::uint8_t g, bool tail) {
        const Answer* known = remembered(tokens, g, tail);
        if (known == nullptr || known->id == kUnknown) w_.prefetch(spec_.key(tokens), g, tail, scope_);
    }

private:
    void start_walk(std::uint8_t g, std::uint32_t start, Walk& walk) {
        walk.first = static_cast<std::uint32_t>(pieces_.size());
        walk.count = 0;
        // A piece starts at a grid point or where the one before it ended: at most two a grid step.
        pieces_.resize(pieces_.size() + 2 * (groups_[g].chunk_tokens / w_.extent_step[g]) + 2);
        walk.at = start;
        walk.hit = starting(g, start);
    }

    // Takes the walk on until it covers x (the entry covering it) or passes it (nothing does).
    Hit extend_walk(std::uint8_t g, std::uint32_t x, Walk& walk) {
        const std::uint32_t step = w_.extent_step[g];
        while (walk.at <= x) {
            if (walk.hit.until == kUnknown) walk.hit = starting(g, walk.at);  // a grid point not looked at yet
            if (walk.hit.covers(walk.at)) {
                const Hit found = walk.hit;
                pieces_[walk.first + walk.count++] = {walk.at, found.until, found.id};
                walk.at = found.until;
                walk.hit = next_at(g, walk.at);
                if (found.until > x) return found;
                if (walk.hit.id != kNone) continue;
            }
            walk.at = walk.at / step * step + step;  // a gap: the next grid point
            walk.hit = {kNone, kUnknown};
        }
        return {};
    }

    Answer* remembered(std::uint32_t tokens, std::uint8_t g, bool tail) {
        const FindGroup& grp = groups_[g];
        const std::uint32_t block = tokens / grp.block_tokens;
        if (block * grp.block_tokens != tokens || block >= grp.blocks) return nullptr;
        return &answers_[grp.first + std::size_t{2} * block + (tail ? 1 : 0)];
    }

    const World& w_;
    const RequestSpec& spec_;
    const std::uint32_t scope_;  // World::index_scope of the request
    std::vector<FindGroup>& groups_;
    std::vector<Answer>& answers_;
    std::vector<Walk>& walks_;
    std::vector<Piece>& pieces_;
};

class Matcher {
public:
    Matcher(const World& world, const Request& request, PrefixFinds& finds, bool io_mode, bool accept_all)
        : w_(world), r_(request), spec_(*request.spec), d_(world.defenses), finds_(finds), io_mode_(io_mode),
          accept_all_(accept_all) {}

    // Is group g resumable at exactly `len` tokens? Appends what it would read to `plan`.
    Check check(std::uint8_t g, std::uint32_t len, std::vector<PlanEntry>* plan,
                std::vector<std::uint32_t>* loads) const {
        if (len == 0) return {};
        const CacheGroup& grp = w_.group(g);
        switch (grp.kind) {
            case GroupKind::full: return check_full(g, len, plan, loads);
            case GroupKind::swa:
                return check_window(g, len, len > grp.window_tokens ? len - grp.window_tokens : 0, plan, loads);
            case GroupKind::chunked:
                return check_window(g, len, len / grp.window_tokens * grp.window_tokens, plan, loads);
            case GroupKind::indexer:
                return check_blocks(g, 0, len / grp.block_tokens * grp.block_tokens, Form::indexer_state, plan, loads);
            case GroupKind::linear: return check_linear(g, len, plan, loads);
        }
        KV_UNREACHABLE("group kind");
    }

    // The largest length <= len, on `grain`, at which group g is resumable; `why` gets the first failure.
    std::uint32_t reach(std::uint8_t g, std::uint32_t len, std::uint32_t grain, Miss* why) const {
        const CacheGroup& grp = w_.group(g);
        if ((grp.kind == GroupKind::full && grp.segment_tokens == grp.block_tokens) || grp.kind == GroupKind::indexer) {
            // Every unit of a prefix is needed and each is usable or not on its own, so the group
            // reaches the last grain point at or before the first unit it cannot take.
            const Check c = check(g, len / grain * grain, nullptr, nullptr);
            if (c.ok) return len / grain * grain;
            if (why != nullptr) *why = {c.miss.group, c.miss.form, c.miss.reason};
            return c.at / grain * grain;
        }
        bool first = true;
        for (std::uint32_t x = len / grain * grain;; x -= grain) {
            const Check c = check(g, x, nullptr, nullptr);
            if (c.ok) return x;
            if (first && why != nullptr) *why = {c.miss.group, c.miss.form, c.miss.reason};
            first = false;
            if (x < grain) return 0;
        }
    }

private:
    PlanEntry entry_for(std::uint32_t id, std::uint32_t start, std::uint32_t end, std::uint8_t g, Form form) const {
        if (id == kNone) return {kNone, 0, kNone, start, end, g, form};
        const Segment& s = w_.segments[id];
        return {id, s.epoch, s.slot, start, end, g, form};
    }

    // Why a registered entry cannot be read over [start, end) now, or nullopt when it can
    // (possibly after a load).
    std::optional<MissReason> problem(std::uint32_t id, std::uint8_t g, std::uint32_t start, std::uint32_t end,
                                      bool* needs_load, std::uint32_t* bad = nullptr) const {
        if (accept_all_) return std::nullopt;
        if (id == kNone) return MissReason::not_cached;
        const Segment& s = w_.segments[id];
        if (s.stage == Stage::writing) return MissReason::writing;
        if (s.kv_version != w_.kv_version) return MissReason::version;
        if (d_.whole_segment_check && (!s.whole || s.stage == Stage::evicting)) return MissReason::partial_segment;
        if (d_.layout_check && s.layout_id != w_.current_layout(g)) return MissReason::layout;
        const bool resident =
            s.slot != kNone && (s.stage == Stage::ready || s.stage == Stage::offloading || s.stage == Stage::evicting);
        if (!resident && d_.residency_check) {
            if (r_.load_failed) return MissReason::load_failed;
            if (!io_mode_ || s.stage != Stage::on_disk) return MissReason::not_resident;
            // Mutant `kv-without-index`: indexer pages are assumed to come back with their KV.
            const bool comes_with_kv = w_.group(g).kind == GroupKind::indexer && !d_.restore_index_with_kv;
            if (!comes_with_kv) *needs_load = true;
        }
        if (resident && d_.alignment_check && w_.slots[s.slot].address % kAlignBytes != 0)
            return MissReason::misaligned;
        if (!units_retained(w_, s, start, end)) return MissReason::window_expired;
        if (w_.group(g).kind == GroupKind::indexer && d_.index_version_check) {
            // The KV the index routes over: what the prefix index publishes for every unit read.
            const auto kv_group = static_cast<std::uint8_t>(w_.group(g).indexed_group);
            for (std::uint32_t x = start; x < end;) {
                const Hit kv = x == start ? finds_.covering(kv_group, x) : finds_.next_at(kv_group, x);
                if (kv.id == kNone || w_.segments[kv.id].data_version() != s.indexed_version()) {
                    if (bad != nullptr) *bad = x;
                    return MissReason::index_stale;
                }
                x = kv.until;
            }
        }
        return std::nullopt;
    }

    // Checks one entry and records it; returns false (with `out` filled) when it cannot be used.
    bool take(std::uint32_t id, std::uint8_t g, Form form, std::uint32_t start, std::uint32_t end,
              std::vector<PlanEntry>* plan, std::vector<std::uint32_t>* loads, Check* out,
              MissReason missing = MissReason::not_cached) const {
        bool needs_load = false;
        std::uint32_t bad = start;
        if (auto p = problem(id, g, start, end, &needs_load, &bad)) {
            out->ok = false;
            const MissReason why = *p == MissReason::not_cached ? missing : *p;
            out->miss = {g, miss_form(form, why), why};  // the group stays in the miss
            out->at = bad;
            return false;
        }
        if (plan != nullptr) plan->push_back(entry_for(id, start, end, g, form));
        if (needs_load && loads != nullptr) loads->push_back(id);
        return true;
    }

    Check check_blocks(std::uint8_t g, std::uint32_t from, std::uint32_t to, Form form, std::vector<PlanEntry>* plan,
                       std::vector<std::uint32_t>* loads, MissReason missing = MissReason::not_cached) const {
        const std::uint32_t block = w_.group(g).block_tokens;
        // The keys are consecutive and known in advance: fetch a batch of index cells at once.
        if (w_.extent_units[g] == 1)
            for (std::uint32_t x = from / block * block, n = 0; x < to && n < kPrefetchBatch; x += block, ++n)
                finds_.prefetch(x + block, g, false);
        return take_pieces(g, form, from / block * block, to, plan, loads, missing);
    }

    // Takes [from, to) of group g as the pieces of the entries covering it, one piece an entry.
    Check take_pieces(std::uint8_t g, Form form, std::uint32_t from, std::uint32_t to, std::vector<PlanEntry>* plan,
                      std::vector<std::uint32_t>* loads, MissReason missing = MissReason::not_cached) const {
        Check c;
        const std::uint32_t unit = w_.unit_tokens(g, form);
        Hit hit = finds_.covering(g, from);
        for (std::uint32_t x = from; x < to;) {
            // Nothing covers x: the lenient matcher reads the unit anyway and looks again after it.
            const std::uint32_t end = hit.covers(x) ? std::min(to, hit.until) : x + unit;
            if (!take(hit.covers(x) ? hit.id : kNone, g, form, x, end, plan, loads, &c, missing)) return c;
            x = end;
            if (x < to) hit = hit.covers(x) ? hit : hit.until == x ? finds_.next_at(g, x) : finds_.covering(g, x);
        }
        return c;
    }

    Check check_full(std::uint8_t g, std::uint32_t len, std::vector<PlanEntry>* plan,
                     std::vector<std::uint32_t>* loads) const {
        const CacheGroup& grp = w_.group(g);
        const std::uint32_t seg_len = grp.segment_tokens;
        const std::uint32_t boundary = len / seg_len * seg_len;               // compression boundary at len
        const std::uint32_t end = len / grp.block_tokens * grp.block_tokens;  // a partial block is never read
        if (seg_len == grp.block_tokens) return check_blocks(g, 0, end, Form::compressed_kv, plan, loads);
        Check c;
        if (d_.tail_boundary_check || accept_all_) {
            c = take_pieces(g, Form::compressed_kv, 0, boundary, plan, loads);
            if (!c.ok) return c;
            // The tail blocks from the boundary on: each single block is anchored at the boundary
            // below its start (World::anchor_of), this one.
            for (std::uint32_t x = boundary; x < end; x += grp.block_tokens)
                if (!take(finds_.find(x + grp.block_tokens, g, true), g, Form::uncompressed_tail, x,
                          x + grp.block_tokens, plan, loads, &c))
                    return c;
            return c;
        }
        // Mutant `no-tail-boundary`: take whatever tail ends at len and whatever compressed
        // segments lead from 0, without asking whether the tail starts where they stop.
        std::uint32_t tail_start = end;
        while (tail_start > boundary) {
            const std::uint32_t id = finds_.find(tail_start, g, true);
            bool needs_load = false;
            if (id == kNone || problem(id, g, tail_start - grp.block_tokens, tail_start, &needs_load)) break;
            tail_start -= grp.block_tokens;
        }
        if (tail_start == end) {
            if (end == boundary) return take_pieces(g, Form::compressed_kv, 0, boundary, plan, loads);
            c.ok = false;
            c.miss = {g, Form::uncompressed_tail, MissReason::not_cached};
            return c;
        }
        take_pieces(g, Form::compressed_kv, 0, boundary, plan, loads);
        for (std::uint32_t x = tail_start; x < end; x += grp.block_tokens)
            take(finds_.find(x + grp.block_tokens, g, true), g, Form::uncompressed_tail, x, x + grp.block_tokens, plan,
                 loads, &c);
        return c;
    }

    Check check_window(std::uint8_t g, std::uint32_t len, std::uint32_t window_start, std::vector<PlanEntry>* plan,
                       std::vector<std::uint32_t>* loads) const {
        const std::uint32_t block = w_.group(g).block_tokens;
        const std::uint32_t end = len / block * block;
        if (d_.swa_window_check || accept_all_)
            return check_blocks(g, window_start, end, Form::swa_window, plan, loads, MissReason::window_expired);
        // Mutant `no-swa-expiry`: the window was valid when its last block was written, so it is
        // taken as valid now; the earlier window blocks are read whether or not they still exist.
        Check c;
        if (end == 0 || end <= window_start) return c;
        const Hit last = finds_.covering(g, end - block);
        if (!take(last.covers(end - block) ? last.id : kNone, g, Form::swa_window, end - block, end, nullptr, nullptr,
                  &c, MissReason::window_expired))
            return c;
        if (plan == nullptr) return c;
        for (std::uint32_t x = window_start / block * block; x < end;) {
            const Hit hit = finds_.covering(g, x);
            const std::uint32_t piece_end = hit.covers(x) ? std::min(end, hit.until) : x + block;
            plan->push_back(entry_for(hit.covers(x) ? hit.id : kNone, x, piece_end, g, Form::swa_window));
            bool needs_load = false;
            if (hit.id != kNone && !problem(hit.id, g, x, piece_end, &needs_load) && needs_load && loads != nullptr)
                loads->push_back(hit.id);
            x = piece_end;
        }
        return c;
    }

    Check check_linear(std::uint8_t g, std::uint32_t len, std::vector<PlanEntry>* plan,
                       std::vector<std::uint32_t>* loads) const {
        // State of a recurrent layer exists only at exact checkpoint positions. A grain finer than
        // the group's block (the `no-lcm` mutant) reads the deepest checkpoint below len as if it
        // were the state at len.
        const std::uint32_t block = w_.group(g).block_tokens;
        const std::uint32_t at = len / block * block;
        Check c;
        if (at == 0) {
            c.ok = false;
            c.miss = {g, Form::linear_state, MissReason::not_cached};
            return c;
        }
        take(finds_.find(at, g, false), g, Form::linear_state, 0, len, plan, loads, &c);
        return c;
    }

    const World& w_;
    const Request& r_;
    const RequestSpec& spec_;
    const Defenses& d_;
    PrefixFinds& finds_;
    bool io_mode_;
    bool accept_all_;
};

std::uint32_t hash_hit_length(const World& world, PrefixFinds& finds, std::uint32_t cap) {
    const std::uint8_t g = primary_group(world);
    const CacheGroup& grp = world.group(g);
    std::uint32_t len = 0;
    const std::uint32_t segments_cap = cap / grp.segment_tokens * grp.segment_tokens;
    for (Hit hit = finds.covering(g, 0); len < segments_cap && hit.covers(len); hit = finds.next_at(g, len))
        len = std::min(segments_cap, hit.until);
    while (len + grp.block_tokens <= cap && finds.find(len + grp.block_tokens, g, true) != kNone)
        len += grp.block_tokens;
    return len;
}

struct Outcome {
    std::uint32_t len = 0;
    std::vector<Miss> misses;
    std::vector<PlanEntry> plan;
    std::vector<std::uint32_t> loads;
};

Outcome settle(const World& world, const Request& request, PrefixFinds& finds, std::uint32_t start_len,
               std::uint32_t grain, bool io_mode) {
    const Defenses& d = world.defenses;
    const auto groups = static_cast<std::uint8_t>(world.config->groups.size());
    Outcome out;
    const Matcher strict(world, request, finds, io_mode, false);
    std::array<std::uint32_t, kMaxGroups> own_reach{};
    std::uint32_t len = start_len;
    if (d.group_intersection) {
        for (bool changed = true; changed;) {
            changed = false;
            for (std::uint8_t g = 0; g < groups; ++g) {
                Miss why{};
                const std::uint32_t y = strict.reach(g, len, grain, &why);
                if (y < len) {
                    why.tokens = len - y;
                    out.misses.push_back(why);
                    len = y;
                    changed = true;
                }
            }
        }
    } else {
        std::uint32_t best = 0;
        for (std::uint8_t g = 0; g < groups; ++g) {
            Miss why{};
            own_reach[g] = strict.reach(g, start_len, grain, &why);
            why.tokens = start_len - own_reach[g];
            if (own_reach[g] < start_len) out.misses.push_back(why);
            best = std::max(best, own_reach[g]);
        }
        len = best;
    }
    out.len = len;
    // The plan: what each group reads at the usable length. Groups that cannot be read there are
    // recorded as they are (a correct policy never gets here with such a group).
    const Matcher lenient(world, request, finds, io_mode, true);
    std::array<bool, kGroupKinds> seen_kind{};
    out.plan.reserve(std::size_t{4} * groups);  // a few pieces a group: one allocation, not one a doubling
    for (std::uint8_t g = 0; g < groups; ++g) {
        std::uint32_t at = len;
        const auto kind = static_cast<std::size_t>(world.group(g).kind);
        if (!d.truncate_every_group && seen_kind[kind]) at = std::max(len, strict.reach(g, start_len, grain, nullptr));
        seen_kind[kind] = true;
        // Whether a check passes does not depend on what it records, so the strict check records
        // as it goes and is undone for the lenient one when it fails.
        const std::size_t planned = out.plan.size();
        const std::size_t loading = out.loads.size();
        if (!strict.check(g, at, &out.plan, &out.loads).ok) {
            out.plan.erase(out.plan.begin() + static_cast<std::ptrdiff_t>(planned), out.plan.end());
            out.loads.erase(out.loads.begin() + static_cast<std::ptrdiff_t>(loading), out.loads.end());
            lenient.check(g, at, &out.plan, &out.loads);
        }
    }
    return out;
}

}  // namespace

LookupResult lookup(const World& world, const Request& request, Scratch& scratch) {
    const RequestSpec& spec = *request.spec;
    const Defenses& d = world.defenses;
    LookupResult result;
    PrefixFinds finds(world, spec, scratch.match());
    const std::uint32_t cap = spec.input_tokens > 0 ? spec.input_tokens - 1 : 0;
    result.hash_hit_len = hash_hit_length(world, finds, cap);
    if (world.rollout == Rollout::off && d.rollout_scope) {
        const std::uint32_t grain = resume_grain(world);
        if (result.hash_hit_len > 0)
            result.misses.push_back(
                {primary_group(world), Form::compressed_kv, MissReason::rollout, result.hash_hit_len / grain * grain});
        return result;
    }
    if (d.hash_hit_is_enough) {
        // The old rule: a hash hit on the first group is reused for every group as it stands.
        const Matcher lenient(world, request, finds, false, true);
        result.resume_len = result.hash_hit_len;
        for (std::uint8_t g = 0; g < world.config->groups.size(); ++g)
            lenient.check(g, result.resume_len, &result.plan, nullptr);
        result.verdict = result.resume_len > 0 ? VerdictKind::resumable : VerdictKind::full_recompute;
        result.recompute_from = result.resume_len;
        return result;
    }
    const std::uint32_t grain = resume_grain(world);
    const std::uint32_t start_len = result.hash_hit_len / grain * grain;
    Outcome now = settle(world, request, finds, start_len, grain, false);
    if (d.residency_check && !request.load_failed && !request.gave_up_waiting && now.len < start_len) {
        Outcome later = settle(world, request, finds, start_len, grain, true);
        if (later.len > now.len && !later.loads.empty()) {
            result.verdict = VerdictKind::io_wait;
            result.resume_len = later.len;
            result.recompute_from = later.len;
            result.misses = std::move(now.misses);
            result.plan = std::move(later.plan);
            result.loads = std::move(later.loads);
            return result;
        }
    }
    result.resume_len = now.len;
    result.recompute_from = now.len;
    result.misses = std::move(now.misses);
    result.plan = std::move(now.plan);
    if (now.len == 0)
        result.verdict = VerdictKind::full_recompute;
    else if (now.len >= start_len)
        result.verdict = VerdictKind::resumable;
    else
        result.verdict = VerdictKind::partial_recompute;
    return result;
}

}  // namespace kvcheck::model
