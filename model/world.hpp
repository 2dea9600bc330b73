// The World: the whole state of the modelled cache manager as one value type (state table,
// per-form pools and free lists, prefix index, in-flight I/O, pins, versions, epochs, graphs).
// Every driver moves it only through apply() in model/steps.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/core.hpp"
#include "model/flat_index.hpp"
#include "model/policy.hpp"
#include "model/preset.hpp"
#include "model/table_allocator.hpp"

namespace kvcheck::model {

inline constexpr std::uint32_t kNone = 0xFFFFFFFFu;
inline constexpr std::uint64_t kAlignBytes = 256;      // VL4: kernels need 256-byte aligned blocks
inline constexpr std::uint64_t kStateEntryBytes = 64;  // RL1: what one state-table entry costs on the GPU
inline constexpr std::uint8_t kNoLabel = 0xFF;

struct RequestSpec;

enum class Stage : std::uint8_t { writing, ready, evicting, offloading, on_disk, loading, freed };
std::string_view stage_name(Stage stage);

// One state-table entry: a stored segment of one cache group, or an extent of several
// consecutive units of one when the world's extent_tokens allows it (docs/invariants.md,
// "Extents"). A unit is a compressed segment for compressed KV and a block for every other
// form; tails and linear checkpoints are always one unit. The state table's own GPU cost is
// counted by admission (RL1) at kStateEntryBytes per entry.
// Packed to 48 bytes (docs/performance.md, proposal 6): the range's start and a tail's or linear
// checkpoint's anchor are derived from `end`, the unit count, the group and the form
// (World::start_of and World::anchor_of, checked against the values given when the entry is
// created), and the two F3 versions share one field, since a segment is either KV or indexer
// state, never both.
struct Segment {
    // Index key: the content key of the prefix that ends with its first unit (for an entry of
    // one unit, the prefix [0, end)).
    std::uint64_t key = 0;
    std::uint32_t lru_prev = kNone;  // neighbours in its form's eviction list (oldest first)
    std::uint32_t lru_next = kNone;
    std::uint32_t end = 0;         // token range covered ends here; World::start_of gives its start
    std::uint32_t epoch = 0;       // bumped on every eviction, offload, reload, migration and block loss
    std::uint32_t slot = kNone;    // GPU slot, kNone when not resident
    std::uint32_t disk = kNone;    // host/disk copy, kNone when none
    std::uint32_t writer = kNone;  // World::writers entry of the request that wrote it
    std::uint16_t kv_version = 0;  // model config epoch when written
    std::uint16_t pins = 0;
    std::uint16_t graph_refs = 0;  // live captured graphs that bake this segment's address
    std::uint16_t layout_id = 0;
    std::uint8_t group : 4 = 0;  // a config has at most 16 groups (config_problem, World's constructor)
    Stage stage : 3 = Stage::freed;
    bool published : 1 = false;  // reachable through the prefix index
    Form form : 3 = Form::compressed_kv;
    bool whole : 1 = true;         // every block of the segment intact
    bool live : 1 = false;         // entry in use
    bool is_tail : 1 = false;      // an uncompressed-tail block of a full group
    bool in_lru : 1 = false;       // sits in an eviction list: its group's when resident, else the host/disk tier's
    bool shed : 1 = false;         // SWA extent: its writer let go and the blocks no resume reads are gone
    std::uint8_t extra_units = 0;  // units beyond the first: the entry covers extra_units + 1 units
    // A unit range another published entry already held when it was written: its writer uses it
    // and never publishes it (extents only; docs/invariants.md, "Extents").
    bool duplicate : 1 = false;

    std::uint32_t units() const { return std::uint32_t{extra_units} + 1; }
    // KV: the version of its content that an indexer records; always 0 for indexer state. (No
    // step rewrites content in place, so it is 0 for KV too; F3 skews indexed_version instead.)
    std::uint16_t data_version() const { return form == Form::indexer_state ? 0 : version_; }
    // Indexer: data_version of the KV it was built over; always 0 for every other form.
    std::uint16_t indexed_version() const { return form == Form::indexer_state ? version_ : 0; }
    // Versions are small counters (F3 adds one per skew); one that would pass 127 stays at 127,
    // so a skewed index never reads as fresh again.
    void set_indexed_version(std::uint16_t version) {
        KV_ASSERT(form == Form::indexer_state, "only indexer state records the KV version it indexes");
        version_ = static_cast<std::uint8_t>(version < 0x7F ? version : 0x7F) & 0x7F;
    }

private:
    std::uint8_t version_ : 7 = 0;  // data_version or indexed_version, by form
};
static_assert(sizeof(Segment) <= 48, "a state-table entry must stay within 48 bytes");

// The request that wrote a segment, kept while any segment it wrote lives: extents compare a
// reader's content with their writer's beyond their index key (matched_end, model/walk.hpp), and rollout
// and the SWA release ask who wrote a segment.
struct Writer {
    std::shared_ptr<const RequestSpec> spec;  // null while the entry is free
    std::uint32_t uid = kNone;
    bool request_live = false;  // its request has not been released yet
};

// One GPU block of a form's pool. `content` is the ground-truth tag of the bytes it holds.
struct Slot {
    std::uint64_t content = 0;
    std::uint64_t address = 0;
    std::uint32_t owner = kNone;  // segment id
    Form pool = Form::compressed_kv;
    std::uint8_t label = kNoLabel;  // form label; cleared on free
};

// A copy on the host/disk tier. With Limits::host_capacity_bytes it rests in host memory or on
// disk; the host's copies form a list, the longest there first (World::host_head).
struct DiskObject {
    std::uint64_t content = 0;
    std::uint32_t owner = kNone;
    std::uint32_t host_prev = kNone;  // neighbours in the host list (disk copy ids)
    std::uint32_t host_next = kNone;
    std::uint32_t on_host = 0;  // 1 when the copy rests in host memory
};

enum class IoKind : std::uint8_t { offload, load };
struct IoOp {
    std::uint32_t segment = kNone;
    std::uint32_t request = kNone;  // the request waiting on a load, kNone for offloads
    IoKind kind = IoKind::load;
    bool live = false;
};

struct GraphRef {
    std::uint32_t segment;
    std::uint32_t slot;
    std::uint64_t address;
};
struct Graph {
    std::vector<GraphRef> refs;
    bool live = false;
};

enum class VerdictKind : std::uint8_t { resumable, io_wait, partial_recompute, full_recompute };
std::string_view verdict_name(VerdictKind kind);

enum class MissReason : std::uint8_t {
    not_cached,
    rollout,
    version,
    layout,
    misaligned,
    partial_segment,
    window_expired,
    index_stale,
    not_resident,
    load_failed,
    writing,
};
inline constexpr int kMissReasonCount = 11;
static_assert(static_cast<int>(MissReason::writing) + 1 == kMissReasonCount);
std::string_view miss_reason_name(MissReason reason);

// The form a miss is filed under when an entry of `entry_form` fails for `reason`: an entry that
// is registered but not back on the GPU is the on-disk prefix's failure (seed §3.5), whichever
// group wrote it; every other failure is the entry's own form's.
constexpr Form miss_form(Form entry_form, MissReason reason) {
    return reason == MissReason::not_resident || reason == MissReason::load_failed ? Form::on_disk_prefix : entry_form;
}

struct Miss {
    std::uint8_t group;
    Form form;
    MissReason reason;
    std::uint32_t tokens = 0;  // what it cut from the usable length (LookupResult::misses)
};

// What the reader believes one read covers: which segment, at which epoch, for which range.
struct PlanEntry {
    std::uint32_t segment = kNone;  // kNone: nothing registered, yet a broken policy reads it
    std::uint32_t epoch = 0;
    std::uint32_t slot = kNone;  // the GPU slot the reader will read (its block table entry)
    std::uint32_t start = 0;
    std::uint32_t end = 0;
    std::uint8_t group = 0;
    Form form = Form::compressed_kv;
};

enum class Phase : std::uint8_t {
    arrived,
    waiting_io,
    io_done,
    validated,
    pinned,
    revalidated,
    allocated,
    read,
    decoding,
    done,
};
std::string_view phase_name(Phase phase);

// Immutable description of a request's tokens: chained hashes of fixed-size content blocks.
struct RequestSpec {
    std::uint32_t uid = 0;
    std::uint32_t reuse_scope =
        0;  // intra-request rollout: only entries written in this scope are reused (sampled answers share it)
    std::uint32_t input_tokens = 0;
    std::uint32_t output_tokens = 0;
    std::uint32_t content_block_tokens = 512;
    std::vector<std::uint64_t> chain;  // chain[i]: hash of content blocks 0..i
    // Sessions: the prompt opens with an earlier turn's prompt and answer, keyed as that turn keys
    // them, so its decoded KV is found again (make_turn_spec). Null for a request of its own.
    std::shared_ptr<const RequestSpec> prior;
    std::uint32_t prior_tokens = 0;  // prior->input_tokens + prior->output_tokens
    // Parallel sampling: which of the prompt's sampled answers this request decodes. Answer 0 is
    // the one greedy decoding gives (identical prompts continue identically); the others differ.
    std::uint32_t sample = 0;
    // Content key of the prefix [0, tokens); inline, as every walk over the index asks for it.
    std::uint64_t key(std::uint32_t tokens) const {
        if (tokens <= prior_tokens) [[unlikely]]
            return tokens == 0 ? 0 : prior->key(tokens);
        if (tokens == 0 || chain.empty()) return 0;
        if (tokens <= input_tokens) {
            const std::size_t block = (tokens - 1) / content_block_tokens;
            KV_ASSERT(block < chain.size(), "content chain shorter than the prompt");
            return hash_combine(chain[block], tokens);
        }
        // Greedy decoding: identical prompts continue identically, so the continuation is keyed on
        // the prompt (and on which sampled answer it is).
        return hash_combine(hash_combine(chain.back(), 0xdec0deULL + sample), tokens);
    }
};

// Builds a spec from per-block content ids, chaining them so that equal prefixes share keys and a
// prefix hit is always a longest common prefix (ids need not be prefix-chained already).
RequestSpec make_request_spec(std::uint32_t uid, const std::vector<std::uint64_t>& block_ids,
                              std::uint32_t content_block_tokens, std::uint32_t input_tokens,
                              std::uint32_t output_tokens);

// Another sampled answer of `first`'s prompt (parallel sampling): the same prompt keys, its own
// answer keys, and first's reuse scope, so intra-request rollout shares the prompt among them.
RequestSpec sample_of(const RequestSpec& first, std::uint32_t uid, std::uint32_t sample);

// The next turn of a session: `prior`'s prompt and answer, then the turn's own tokens. The first
// `shared_blocks` ids are the prior's whole prompt blocks; every later chain entry also hashes the
// prior's content, so the turn's own keys differ from any request that does not continue it.
// Needs input_tokens >= prior->input_tokens + prior->output_tokens.
RequestSpec make_turn_spec(std::uint32_t uid, std::shared_ptr<const RequestSpec> prior, std::uint32_t shared_blocks,
                           const std::vector<std::uint64_t>& block_ids, std::uint32_t content_block_tokens,
                           std::uint32_t input_tokens, std::uint32_t output_tokens);

struct Request {
    std::shared_ptr<const RequestSpec> spec;
    Phase phase = Phase::arrived;
    std::uint32_t pos = 0;           // tokens whose KV this request holds
    std::uint32_t resume_len = 0;    // tokens it will read from cache
    std::uint32_t hash_hit_len = 0;  // what a plain hash lookup would have reported
    VerdictKind verdict = VerdictKind::full_recompute;
    std::uint32_t pending_loads = 0;
    bool load_failed = false;
    // It stopped waiting for its loads (stop_waiting): they go on without it, and its later
    // lookups take only what is on the GPU.
    bool gave_up_waiting = false;
    bool uncached = false;                     // admission refused its blocks: computes without caching
    std::uint8_t lookups = 0;                  // bounded retries after a stale revalidation
    std::uint32_t config_epoch_at_lookup = 0;  // config epoch the plan was validated against
    std::vector<PlanEntry> plan;               // what the read step will read
    std::vector<std::uint32_t> pinned;         // segments this request holds a pin on
    std::vector<std::uint32_t> owned;          // segments it allocated and writes
    std::uint32_t writer = kNone;              // its World::writers entry, fixed when it is added
};

enum class Rollout : std::uint8_t { off, intra_request, cross_request };

struct Limits {
    std::uint64_t gpu_budget_bytes = 1ULL << 30;
    std::uint64_t disk_capacity_bytes = 1ULL << 40;
    std::uint8_t max_lookups = 3;  // lookups per request before it gives up on the cache
    bool capture_graphs = true;    // decode runs as captured graphs (RL4 applies)
    // A full host/disk tier drops its least recently offloaded on-disk entries to take an offload
    // (World::disk_lru_head); without it a full tier refuses offloads.
    bool tier_eviction = false;
    // Host memory, the tier's first part: a new copy rests there, and the copies there longest
    // move to disk to make room for it (World::host_head). 0: every copy rests on disk. Where a
    // copy rests decides only how fast and how reliably a driver moves it.
    std::uint64_t host_capacity_bytes = 0;
    // Tokens one state-table entry may cover per group (docs/invariants.md, "Extents"): whole
    // units in chunks aligned to multiples of the span, which is cut down to a multiple of the
    // LCM grain and the unit and to kExtentUnitsMax units; 0 (or too few tokens) is one entry a unit.
    std::uint32_t extent_tokens = 0;
};
inline constexpr std::uint32_t kExtentUnitsMax = 256;  // Segment::extra_units is one byte

struct World {
    std::shared_ptr<const ModelConfig> config;
    Derived derived;
    Defenses defenses;
    Rollout rollout = Rollout::cross_request;
    Limits limits;

    std::uint16_t kv_version = 1;             // weights and quantisation version (F5)
    std::uint32_t config_epoch = 0;           // bumped by every F5 change; plans remember it
    std::vector<std::uint16_t> layout_shift;  // per group: added to the group's layout id (F5 layout change)

    std::uint32_t grain_tokens = 1;           // model::resume_grain under this policy
    std::vector<std::uint32_t> extent_units;  // per group: units one entry may cover (1..kExtentUnitsMax)
    // Per group: the tokens an extent's start is a multiple of, its chunk's start aside (the
    // least common multiple of the resume grain and the group's unit; docs/invariants.md).
    std::vector<std::uint32_t> extent_step;
    // Per SWA group with the resume grain on its block grid: what resumable_blocks counts per
    // grain period, fixed by the group and the grain (see there).
    struct WindowPeriods {
        bool on_grid = false;           // the grain is a multiple of the block
        std::uint32_t kept_blocks = 0;  // readable blocks of a period once the window starts inside it
        std::uint32_t early = 0;        // periods i >= 1 with i * grain < window, whose blocks are all readable
    };
    std::array<WindowPeriods, kMaxGroups> window_periods{};

    std::vector<Segment, TableAllocator<Segment>> segments;  // the state table; index = segment id
    std::vector<std::uint32_t> free_segment_ids;
    std::uint32_t live_segments = 0;
    std::vector<Slot> slots;
    std::array<std::vector<std::uint32_t>, kFormCount> free_slots;  // RL2: one free list per form
    std::vector<std::uint32_t> shared_free_slots;                   // used only without separate lists
    std::vector<DiskObject, TableAllocator<DiskObject>> disk;
    std::vector<std::uint32_t> free_disk;
    FlatIndex index;  // prefix index -> segment id (confirmed by holds())
    std::vector<IoOp> io;
    // Finished I/O slots for reuse, as a bitmap (bit i%64 of word i/64 is set when io[i] is free),
    // so that the lowest free slot is found with a bit scan; no free slot lies below word free_io_low.
    std::vector<std::uint64_t> free_io;
    std::size_t free_io_low = 0;
    std::vector<Writer> writers;  // Segment::writer and Request::writer name entries here
    std::vector<std::uint32_t> free_writers;
    std::uint32_t writers_released = 0;  // releases since the last sweep of writers
    std::vector<Request> requests;       // slots; finished ones are recycled
    std::vector<std::uint32_t> free_requests;
    std::vector<Graph> graphs;  // one per request slot

    // Eviction candidates (resident, unpinned, not under a guarded graph), least recently used
    // first: one intrusive doubly-linked list per group and per tail/non-tail, threaded through
    // the segments. List i holds group i/2, tail blocks when i is odd.
    std::vector<std::uint32_t> lru_head;
    std::vector<std::uint32_t> lru_tail;
    static std::size_t lru_list(const Segment& s) { return std::size_t{s.group} * 2 + (s.is_tail ? 1 : 0); }
    // The group whose entries eviction list `list` holds, and whether they are its tails.
    static std::uint8_t lru_list_group(std::size_t list) { return static_cast<std::uint8_t>(list / 2); }
    static bool lru_list_of_tails(std::size_t list) { return list % 2 == 1; }
    // With Limits::tier_eviction, the host/disk tier's own eviction list: the entries whose only
    // copy is there (on disk, no transfer in flight, unpinned), least recently offloaded first,
    // threaded through the same links (such an entry holds no GPU slot, so it is in no GPU list).
    std::uint32_t disk_lru_head = kNone;
    std::uint32_t disk_lru_tail = kNone;
    // With Limits::host_capacity_bytes, the copies that rest in host memory, placed there
    // longest first, linked through DiskObject::host_prev and host_next.
    std::uint32_t host_head = kNone;
    std::uint32_t host_tail = kNone;

    // Evidence counters for the cheap per-step checks; apply() clears them before each step.
    std::uint32_t moved_under_graph = 0;  // RL4: a graph-referenced segment was freed or moved
    std::uint32_t cross_form_reuse = 0;   // RL2: a slot of one form's pool went to another form

    std::uint64_t gpu_used_bytes = 0;   // resident segment bytes plus the state table
    std::uint64_t disk_used_bytes = 0;  // the whole host/disk tier
    std::uint64_t host_used_bytes = 0;  // its part in host memory
    std::array<std::uint64_t, kFormCount> bytes_by_form{};

    World(std::shared_ptr<const ModelConfig> model, const Defenses& policy, Limits limit, Rollout mode);

    const CacheGroup& group(std::uint8_t g) const { return config->groups[g]; }
    std::uint16_t current_layout(std::uint8_t g) const;
    // The prefix index's partition a request looks up and publishes in: under intra-request
    // rollout, while the policy keeps the rollout scope, one per reuse scope (an engine that salts
    // its cache keys with the scope, as vLLM's cache_salt does), so that no lookup finds another
    // scope's entries; else 0, one partition shared by every request.
    bool scoped_index() const { return rollout == Rollout::intra_request && defenses.rollout_scope; }
    std::uint32_t index_scope(const RequestSpec& spec) const { return scoped_index() ? spec.reuse_scope + 1 : 0; }
    std::uint64_t index_key(std::uint64_t content_key, std::uint8_t g, bool tail, std::uint32_t scope) const;
    std::uint32_t find(std::uint64_t content_key, std::uint8_t g, bool tail, std::uint32_t scope) const;
    void prefetch(std::uint64_t content_key, std::uint8_t g, bool tail,
                  std::uint32_t scope) const;  // of find's first cell
    // Starts fetching both cache lines segment id's row may span.
    void prefetch_row(std::uint32_t id) const {
        const auto* row = reinterpret_cast<const char*>(&segments[id]);
        __builtin_prefetch(row, 1);
        __builtin_prefetch(row + sizeof(Segment) - 1, 1);
    }
    // Whether the entry's host/disk copy rests in host memory (Limits::host_capacity_bytes).
    bool copy_on_host(const Segment& s) const { return s.disk != kNone && disk[s.disk].on_host != 0; }
    // The index's confirmation: does segment id hold this prefix of this group and form, in this
    // partition (index_scope)?
    bool holds(std::uint32_t id, std::uint64_t content_key, std::uint8_t g, bool tail, std::uint32_t scope) const {
        const Segment& s = segments[id];
        return s.key == content_key && s.group == g && s.is_tail == tail && (scope == 0 || segment_scope(s) == scope);
    }
    // What an entry occupies in its slot: its units at the group's usual size, except a tail
    // block (raw KV) and a shed window extent (only the units it keeps), which bytes_of_cut sizes.
    std::uint64_t bytes_of(const Segment& seg) const {
        if (seg.is_tail || seg.shed) return bytes_of_cut(seg);
        const GroupBytes& b = derived.group_bytes[seg.group];
        return b.size_fixed ? b.usual_bytes : std::uint64_t{seg.units()} * b.usual_bytes;
    }
    std::uint64_t bytes_of_cut(const Segment& seg) const;
    // The tokens of one unit of a group's entries of this form: a compressed segment, else a block.
    std::uint32_t unit_tokens(std::uint8_t g, Form form) const {
        const CacheGroup& grp = config->groups[g];
        return form == Form::compressed_kv ? grp.segment_tokens : grp.block_tokens;
    }
    // Units one entry of this group and form may cover: tails and linear checkpoints stay single.
    std::uint32_t extent_units_of(std::uint8_t g, Form form) const {
        return form == Form::uncompressed_tail || form == Form::linear_state ? 1 : extent_units[g];
    }
    // Where a segment's token range starts: linear checkpoints cover [0, end), every other entry
    // its units before its end (write_range's shapes).
    std::uint32_t start_of(const Segment& seg) const {
        if (seg.form == Form::linear_state) return 0;
        return seg.end - seg.units() * unit_tokens(seg.group, seg.form);
    }
    // The first token of the chunk a position lies in: an extent never crosses a multiple of
    // extent_units_of units.
    std::uint32_t chunk_start(std::uint8_t g, Form form, std::uint32_t position) const {
        const std::uint32_t chunk = extent_units_of(g, form) * unit_tokens(g, form);
        return position / chunk * chunk;
    }
    // Whether the entry still spans a plan's range (a split shortens an extent); a linear
    // checkpoint is read as the state at the plan's end, whatever that end.
    bool holds_range(const Segment& seg, std::uint32_t start, std::uint32_t end) const {
        return seg.form == Form::linear_state || (start_of(seg) <= start && end <= seg.end);
    }
    std::uint32_t owner_uid(const Segment& seg) const { return writers[seg.writer].uid; }
    // The reuse scope of the request that wrote it (RequestSpec::reuse_scope): a sampled answer
    // writes in its first answer's scope.
    std::uint32_t owner_scope(const Segment& seg) const { return writers[seg.writer].spec->reuse_scope; }
    // The index partition an entry is published in (index_scope of its writer).
    std::uint32_t segment_scope(const Segment& seg) const { return scoped_index() ? owner_scope(seg) + 1 : 0; }
    const RequestSpec& writer_spec(const Segment& seg) const { return *writers[seg.writer].spec; }
    // A tail block's compression boundary (the segment boundary its start lies in), a linear
    // checkpoint's state position, 0 for every other entry.
    std::uint32_t anchor_of(const Segment& seg) const;
    std::uint32_t add_request(std::shared_ptr<const RequestSpec> spec);
    // Frees a finished request's slot for reuse (long traces keep memory bounded). Now and then
    // it also frees the writers entries that neither a request nor a live segment names.
    void release_request(std::uint32_t r);
};

// The ground-truth tag of what a group's stored range should hold for this token prefix now.
std::uint64_t truth_tag(const World& world, const RequestSpec& spec, std::uint8_t group, std::uint32_t start,
                        std::uint32_t end);

// The content tag of [start, end) of entry s, whose whole range holds `content` (a slot's or a
// disk copy's tag). Part of an extent holds its writer's content over that part, as correct a
// write as the whole: the difference between `content` and a correct write of the whole entry
// now is carried over, so a fault, a stale version or layout, or unfinished content shows in
// every part; blocks a shed SWA entry let go of hold nothing (0). The whole range is `content`.
std::uint64_t part_tag(const World& world, const Segment& s, std::uint64_t content, std::uint32_t start,
                       std::uint32_t end);
// The same without the shed blocks' emptiness: what the part holds as a slot's tag of its own
// once the entry is split (a shed part still knows which of its blocks are gone).
std::uint64_t part_content(const World& world, const Segment& s, std::uint64_t content, std::uint32_t start,
                           std::uint32_t end);

// Where a fault lands, asked of the model so that no driver walks World's lists. The segments of
// `form`, eviction list by eviction list, each from its least recently used entry (with `hottest`,
// from its most recently used one).
void segments_by_recency(const World& world, Form form, bool hottest, std::vector<std::uint32_t>& out);
// The segments live captured graphs bake in: request slot `first`'s graph first (kNone: none
// first), then the others in slot order, each in the order its graph captured them.
void captured_segments(const World& world, std::uint32_t first, std::vector<std::uint32_t>& out);
// The least recently used entry of every non-empty eviction list, list by list.
void eviction_heads(const World& world, std::vector<std::uint32_t>& out);

// A canonical hash of everything that determines future behaviour (explorers use it).
std::uint64_t state_hash(const World& world);

}  // namespace kvcheck::model
