// Lookup with validation. Each group has a "reach": the longest length at which its form is
// resumable now; the usable length is a fixed point of the reaches (an intersection, never a max),
// taken on the LCM grain (VL1). Broken policies switch single checks off here or in steps.cpp.
#include "model/match.hpp"

#include <algorithm>
#include <optional>

#include "model/core.hpp"

namespace kvcheck::model {

std::uint8_t primary_group(const World& world) {
    for (std::size_t g = 0; g < world.config->groups.size(); ++g)
        if (world.config->groups[g].kind == GroupKind::full) return static_cast<std::uint8_t>(g);
    KV_UNREACHABLE("config_problem() guarantees a full group");
}

std::uint32_t resume_grain(const World& world) {
    const Defenses& d = world.defenses;
    if (d.hash_hit_is_enough) return world.group(primary_group(world)).block_tokens;
    return d.lcm_boundary ? world.derived.lcm_tokens : world.derived.min_block_tokens;
}

bool window_block_resumable(const World& world, const CacheGroup& group, std::uint32_t end) {
    // The first grain point at or after `end` is the resume most likely to read the block; a
    // later one's window starts later still. (A window longer than that point starts at 0.)
    const std::uint32_t grain = resume_grain(world);
    const std::uint64_t first = (std::uint64_t{end} + grain - 1) / grain * grain;
    return first < group.window_tokens || (first - group.window_tokens) / group.block_tokens * group.block_tokens < end;
}

namespace {

// How many index cells check_blocks fetches ahead; a failed check stops early, so more is waste.
constexpr std::uint32_t kPrefetchBatch = 8;

struct Check {
    bool ok = true;
    Miss miss{};
};

// The prefix index's answers for one request's prefixes, remembered for the rest of one lookup.
// The world does not change during a lookup, yet the matcher asks for the same blocks several
// times (each group's reach, the plan, the pass that allows loads), and each fresh answer costs
// two key hashes and an index probe. Kept per group, tail flag and prefix length in the group's
// blocks; a length off the group's block grid or past the request is looked up every time.
class PrefixFinds {
public:
    PrefixFinds(const World& world, const RequestSpec& spec) : w_(world), spec_(spec) {
        const std::uint32_t tokens = spec.input_tokens + spec.output_tokens;
        for (const CacheGroup& grp : world.config->groups) {
            const std::uint32_t blocks = tokens / grp.block_tokens + 1;
            groups_.push_back({ids_.size(), blocks, grp.block_tokens});
            ids_.resize(ids_.size() + std::size_t{2} * blocks, kUnknown);
        }
    }

    // World::find of the prefix [0, tokens) of this request.
    std::uint32_t find(std::uint32_t tokens, std::uint8_t g, bool tail) {
        std::uint32_t* id = remembered(tokens, g, tail);
        if (id == nullptr) return w_.find(spec_.key(tokens), g, tail);
        if (*id == kUnknown) *id = w_.find(spec_.key(tokens), g, tail);
        return *id;
    }

    // World::prefetch of the same cell, skipped when the answer is already known.
    void prefetch(std::uint32_t tokens, std::uint8_t g, bool tail) {
        const std::uint32_t* id = remembered(tokens, g, tail);
        if (id == nullptr || *id == kUnknown) w_.prefetch(spec_.key(tokens), g, tail);
    }

private:
    static constexpr std::uint32_t kUnknown = kNone - 1;  // segment ids never come near it
    struct Group {
        std::size_t first;  // its first entry in ids_
        std::uint32_t blocks;
        std::uint32_t block_tokens;
    };

    std::uint32_t* remembered(std::uint32_t tokens, std::uint8_t g, bool tail) {
        const Group& grp = groups_[g];
        const std::uint32_t block = tokens / grp.block_tokens;
        if (block * grp.block_tokens != tokens || block >= grp.blocks) return nullptr;
        return &ids_[grp.first + std::size_t{2} * block + (tail ? 1 : 0)];
    }

    const World& w_;
    const RequestSpec& spec_;
    std::vector<Group> groups_;
    std::vector<std::uint32_t> ids_;  // the answers, kUnknown until asked
};

class Matcher {
public:
    Matcher(const World& world, const Request& request, PrefixFinds& finds, bool io_mode, bool accept_all)
        : w_(world), r_(request), spec_(*request.spec), d_(world.defenses), finds_(finds), io_mode_(io_mode),
          accept_all_(accept_all) {}

    // Is group g resumable at exactly `len` tokens? Appends what it would read to `plan`.
    Check check(std::uint8_t g, std::uint32_t len, std::vector<PlanEntry>* plan, std::vector<std::uint32_t>* loads) const {
        if (len == 0) return {};
        const CacheGroup& grp = w_.group(g);
        switch (grp.kind) {
            case GroupKind::full: return check_full(g, len, plan, loads);
            case GroupKind::swa: return check_window(g, len, len > grp.window_tokens ? len - grp.window_tokens : 0, plan, loads);
            case GroupKind::chunked: return check_window(g, len, len / grp.window_tokens * grp.window_tokens, plan, loads);
            case GroupKind::indexer: return check_blocks(g, 0, len / grp.block_tokens * grp.block_tokens, Form::indexer_state, plan, loads);
            case GroupKind::linear: return check_linear(g, len, plan, loads);
        }
        KV_UNREACHABLE("group kind");
    }

    // The largest length <= len, on `grain`, at which group g is resumable; `why` gets the first failure.
    std::uint32_t reach(std::uint8_t g, std::uint32_t len, std::uint32_t grain, Miss* why) const {
        bool first = true;
        for (std::uint32_t x = len / grain * grain;; x -= grain) {
            const Check c = check(g, x, nullptr, nullptr);
            if (c.ok) return x;
            if (first && why != nullptr) *why = c.miss;
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

    // Why a registered entry cannot be read now, or nullopt when it can (possibly after a load).
    std::optional<MissReason> problem(std::uint32_t id, std::uint8_t g, bool* needs_load) const {
        if (accept_all_) return std::nullopt;
        if (id == kNone) return MissReason::not_cached;
        const Segment& s = w_.segments[id];
        if (w_.rollout == Rollout::intra_request && s.owner != spec_.reuse_scope) return MissReason::rollout;
        if (s.stage == Stage::writing) return MissReason::writing;
        if (s.kv_version != w_.kv_version) return MissReason::version;
        if (d_.whole_segment_check && (!s.whole || s.stage == Stage::evicting)) return MissReason::partial_segment;
        if (d_.layout_check && s.layout_id != w_.current_layout(g)) return MissReason::layout;
        const bool resident = s.slot != kNone && (s.stage == Stage::ready || s.stage == Stage::offloading ||
                                                  s.stage == Stage::evicting);
        if (!resident && d_.residency_check) {
            if (r_.load_failed) return MissReason::load_failed;
            if (!io_mode_ || s.stage != Stage::on_disk) return MissReason::not_resident;
            // Mutant `kv-without-index`: indexer pages are assumed to come back with their KV.
            const bool comes_with_kv = w_.group(g).kind == GroupKind::indexer && !d_.restore_index_with_kv;
            if (!comes_with_kv) *needs_load = true;
        }
        if (resident && d_.alignment_check && w_.slots[s.slot].address % kAlignBytes != 0) return MissReason::misaligned;
        if (w_.group(g).kind == GroupKind::indexer && d_.index_version_check) {
            const auto kv_group = static_cast<std::uint8_t>(w_.group(g).indexed_group);
            const std::uint32_t kv = w_.find(s.key, kv_group, false);
            if (kv == kNone || w_.segments[kv].data_version() != s.indexed_version()) return MissReason::index_stale;
        }
        return std::nullopt;
    }

    // Checks one entry and records it; returns false (with `out` filled) when it cannot be used.
    bool take(std::uint32_t id, std::uint8_t g, Form form, std::uint32_t start, std::uint32_t end,
              std::vector<PlanEntry>* plan, std::vector<std::uint32_t>* loads, Check* out,
              MissReason missing = MissReason::not_cached) const {
        bool needs_load = false;
        if (auto p = problem(id, g, &needs_load)) {
            out->ok = false;
            out->miss = {g, form, *p == MissReason::not_cached ? missing : *p};
            return false;
        }
        if (plan != nullptr)
            plan->push_back(entry_for(id, start, end, g, form));
        if (needs_load && loads != nullptr) loads->push_back(id);
        return true;
    }

    Check check_blocks(std::uint8_t g, std::uint32_t from, std::uint32_t to, Form form,
                       std::vector<PlanEntry>* plan, std::vector<std::uint32_t>* loads,
                       MissReason missing = MissReason::not_cached) const {
        Check c;
        const std::uint32_t block = w_.group(g).block_tokens;
        // The keys are consecutive and known in advance: fetch a batch of index cells at once.
        for (std::uint32_t x = from / block * block, n = 0; x < to && n < kPrefetchBatch; x += block, ++n)
            finds_.prefetch(x + block, g, false);
        for (std::uint32_t x = from / block * block; x < to; x += block)
            if (!take(finds_.find(x + block, g, false), g, form, x, x + block, plan, loads, &c, missing)) return c;
        return c;
    }

    Check check_full(std::uint8_t g, std::uint32_t len, std::vector<PlanEntry>* plan, std::vector<std::uint32_t>* loads) const {
        const CacheGroup& grp = w_.group(g);
        const std::uint32_t seg_len = grp.segment_tokens;
        const std::uint32_t boundary = len / seg_len * seg_len;            // compression boundary at len
        const std::uint32_t end = len / grp.block_tokens * grp.block_tokens;  // a partial block is never read
        if (seg_len == grp.block_tokens) return check_blocks(g, 0, end, Form::compressed_kv, plan, loads);
        Check c;
        if (d_.tail_boundary_check || accept_all_) {
            for (std::uint32_t x = 0; x < boundary; x += seg_len)
                if (!take(finds_.find(x + seg_len, g, false), g, Form::compressed_kv, x, x + seg_len, plan, loads, &c))
                    return c;
            for (std::uint32_t x = boundary; x < end; x += grp.block_tokens) {
                const std::uint32_t id = finds_.find(x + grp.block_tokens, g, true);
                if (!take(id, g, Form::uncompressed_tail, x, x + grp.block_tokens, nullptr, nullptr, &c)) return c;
                if (!accept_all_ && w_.anchor_of(w_.segments[id]) != boundary) {
                    c.ok = false;
                    c.miss = {g, Form::uncompressed_tail, MissReason::tail_boundary};
                    return c;
                }
                take(id, g, Form::uncompressed_tail, x, x + grp.block_tokens, plan, loads, &c);
            }
            return c;
        }
        // Mutant `no-tail-boundary`: take whatever tail ends at len and whatever compressed
        // segments lead from 0, without asking whether the tail starts where they stop.
        std::uint32_t tail_start = end;
        while (tail_start > boundary) {
            const std::uint32_t id = finds_.find(tail_start, g, true);
            bool needs_load = false;
            if (id == kNone || problem(id, g, &needs_load)) break;
            tail_start -= grp.block_tokens;
        }
        if (tail_start == end) {
            if (end == boundary) return check_full_segments_only(g, boundary, plan, loads);
            c.ok = false;
            c.miss = {g, Form::uncompressed_tail, MissReason::not_cached};
            return c;
        }
        Check ignored;
        for (std::uint32_t x = 0; x + seg_len <= boundary; x += seg_len)
            if (!take(finds_.find(x + seg_len, g, false), g, Form::compressed_kv, x, x + seg_len, plan, loads, &ignored)) break;
        for (std::uint32_t x = tail_start; x < end; x += grp.block_tokens)
            take(finds_.find(x + grp.block_tokens, g, true), g, Form::uncompressed_tail, x, x + grp.block_tokens,
                 plan, loads, &c);
        return c;
    }

    Check check_full_segments_only(std::uint8_t g, std::uint32_t boundary, std::vector<PlanEntry>* plan,
                                   std::vector<std::uint32_t>* loads) const {
        Check c;
        const std::uint32_t seg_len = w_.group(g).segment_tokens;
        for (std::uint32_t x = 0; x < boundary; x += seg_len)
            if (!take(finds_.find(x + seg_len, g, false), g, Form::compressed_kv, x, x + seg_len, plan, loads, &c)) return c;
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
        if (!take(finds_.find(end, g, false), g, Form::swa_window, end - block, end, nullptr, nullptr, &c,
                  MissReason::window_expired))
            return c;
        if (plan == nullptr) return c;
        for (std::uint32_t x = window_start / block * block; x < end; x += block) {
            const std::uint32_t id = finds_.find(x + block, g, false);
            plan->push_back(entry_for(id, x, x + block, g, Form::swa_window));
            bool needs_load = false;
            if (id != kNone && !problem(id, g, &needs_load) && needs_load && loads != nullptr) loads->push_back(id);
        }
        return c;
    }

    Check check_linear(std::uint8_t g, std::uint32_t len, std::vector<PlanEntry>* plan, std::vector<std::uint32_t>* loads) const {
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
    while (len + grp.segment_tokens <= cap && finds.find(len + grp.segment_tokens, g, false) != kNone)
        len += grp.segment_tokens;
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

Outcome settle(const World& world, const Request& request, PrefixFinds& finds, std::uint32_t start_len, std::uint32_t grain,
               bool io_mode) {
    const Defenses& d = world.defenses;
    const auto groups = static_cast<std::uint8_t>(world.config->groups.size());
    Outcome out;
    const Matcher strict(world, request, finds, io_mode, false);
    std::vector<std::uint32_t> own_reach(groups, 0);
    std::uint32_t len = start_len;
    if (d.group_intersection) {
        for (bool changed = true; changed;) {
            changed = false;
            for (std::uint8_t g = 0; g < groups; ++g) {
                Miss why{};
                const std::uint32_t y = strict.reach(g, len, grain, &why);
                if (y < len) {
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
            if (own_reach[g] < start_len) out.misses.push_back(why);
            best = std::max(best, own_reach[g]);
        }
        len = best;
    }
    out.len = len;
    // The plan: what each group reads at the usable length. Groups that cannot be read there are
    // recorded as they are (a correct policy never gets here with such a group).
    const Matcher lenient(world, request, finds, io_mode, true);
    std::vector<bool> seen_kind(8, false);
    for (std::uint8_t g = 0; g < groups; ++g) {
        std::uint32_t at = len;
        const auto kind = static_cast<std::size_t>(world.group(g).kind);
        if (!d.truncate_every_group && seen_kind[kind]) at = std::max(len, strict.reach(g, start_len, grain, nullptr));
        seen_kind[kind] = true;
        const Matcher& m = strict.check(g, at, nullptr, nullptr).ok ? strict : lenient;
        m.check(g, at, &out.plan, &out.loads);
    }
    return out;
}

}  // namespace

LookupResult lookup(const World& world, const Request& request) {
    const RequestSpec& spec = *request.spec;
    const Defenses& d = world.defenses;
    LookupResult result;
    PrefixFinds finds(world, spec);
    const std::uint32_t cap = spec.input_tokens > 0 ? spec.input_tokens - 1 : 0;
    result.hash_hit_len = hash_hit_length(world, finds, cap);
    if (world.rollout == Rollout::off) {
        if (result.hash_hit_len > 0) result.misses.push_back({primary_group(world), Form::compressed_kv, MissReason::rollout});
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
    if (d.residency_check && !request.load_failed && now.len < start_len) {
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
    if (now.len == 0) result.verdict = VerdictKind::full_recompute;
    else if (now.len >= start_len) result.verdict = VerdictKind::resumable;
    else result.verdict = VerdictKind::partial_recompute;
    return result;
}

}  // namespace kvcheck::model
