// The one step interface. Every driver (simulator, explorers, property tests, replay) moves a
// World only through apply(); enabled() says which steps an actor may take now.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/alloc.hpp"
#include "model/match.hpp"
#include "model/scratch.hpp"
#include "model/world.hpp"

namespace kvcheck::model {

enum class StepKind : std::uint8_t {
    // request worker; target = request
    lookup,
    pin,
    revalidate,
    allocate,
    read,
    commit,
    decode,
    finish,  // commit captures the decode graph
    evict,
    offload,  // evictor / offloader; target = segment
    io_complete,
    io_fail,             // I/O engine; target = I/O op. io_fail is F2 (load or offload failure)
    interrupt_eviction,  // F1: eviction stops half-way; target = segment
    skew_index,          // F3: an indexer segment is left over from another KV version; target = it
    bump_model_version,  // F5: weights change
    change_layout,       // F5: a group's kernel layout changes; target = group
    misaligned_reload,   // F9: a load completes into a misaligned staging buffer; target = I/O op
    migrate,             // F10: a resident segment moves to another slot; target = segment
    lose_block,          // F11: one block of a compressed segment is lost; target = segment
    partial_load,        // F2: a load completes with only part of the segment's bytes; target = I/O op
    stop_waiting,        // a request waiting on loads stops waiting (the driver's timeout); target = request
    abort,               // a request whose load failed ends without computing (a `fail` policy); target = request
};
inline constexpr int kStepKindCount = 22;
std::string_view step_kind_name(StepKind kind);

// What a step's target names: a request, a segment, an I/O operation, or a group (change_layout;
// bump_model_version ignores its target).
enum class StepTarget : std::uint8_t { request, segment, io, global };
StepTarget target_of(StepKind kind);
std::optional<StepKind> step_kind_from_name(std::string_view name);
bool is_fault(StepKind kind);

struct Step {
    StepKind kind = StepKind::lookup;
    std::uint32_t target = 0;
    std::uint32_t arg = 0;  // decode: tokens to decode (0: one block of the smallest size)
    bool operator==(const Step&) const = default;
};

// A change of where an entry's content is that `StepOutcome::evicted` does not name, for the
// drivers' residency figures (sim/entry_ages.hpp): the content reached a GPU slot (written, or
// loaded back from host/disk), an extent split (`id` the new part, `from` the entry it split
// from, whose history it shares), or the GPU copy went once its offload completed. It happened
// after the step's first `after_evictions` evictions and before the rest (an id an eviction
// frees may be reused by a write in the same step).
struct Residency {
    enum class Kind : std::uint8_t { written, loaded, split, offloaded };
    Kind kind = Kind::written;
    std::uint32_t id = kNone;
    std::uint32_t from = kNone;
    std::uint32_t after_evictions = 0;
};

struct StepOutcome {
    std::optional<LookupResult> lookup;     // set by lookup
    std::uint32_t read_request = kNone;     // set by read: invariants examine that request's plan
    bool stale_revalidation = false;        // revalidate found a changed epoch or version
    std::vector<Eviction> evicted;          // admission and explicit evictions, for metrics
    std::vector<std::uint32_t> io_started;  // new I/O ops the driver must complete or fail
    std::vector<Residency> residency;       // GPU arrivals, splits and offloads' departures
    std::uint32_t recaptures = 0;
    std::uint32_t tokens_computed = 0;  // prefill or decode tokens computed
    std::uint32_t index_rebuilds = 0;
    std::uint32_t demotions = 0;  // host/disk copies moved from host memory to disk
    bool admission_refused = false;
    bool graph_moved = false;  // a live graph's address moved (RL4 evidence)

    // Back to a fresh outcome, keeping the lists' buffers (drivers that apply millions of steps
    // reuse one outcome).
    void reset() {
        StepOutcome fresh;
        fresh.evicted.swap(evicted);
        fresh.io_started.swap(io_started);
        fresh.residency.swap(residency);
        fresh.evicted.clear();
        fresh.io_started.clear();
        fresh.residency.clear();
        *this = std::move(fresh);
    }
};

bool enabled(const World& world, const Step& step);
// A request's lifecycle as a chain: in each phase at most one request step is next (decoding
// ends in finish once every output token is decoded); none while it waits on loads, once it is
// done, or for a free slot. stop_waiting and abort are the drivers' choices, never next here.
std::optional<StepKind> next_request_step(const Request& request);
// Whether an offload of an entry of eviction list `list` (World::lru_list) can be enabled now.
// Every entry holds at least Derived::min_entry_bytes except the parts of shed window extents
// that keep no block, which hold none and only window groups' lists hold. So when the host/disk
// tier has less room than that and nothing it may drop (Limits::tier_eviction), only those lists
// can offer one: the simulator's offloader skips the others, which a full tier would otherwise
// make it walk in full at every call.
bool may_offload_from(const World& world, std::size_t list);

// The order an LRU offloader takes entries in: eviction list by eviction list, each from its
// least recently used entry, skipping the lists may_offload_from rules out (asked as the walk
// reaches each list, so offloads on the way count). Each entry's successor is taken before the
// caller acts on it, so offloading the current entry does not derail the walk.
class OffloadWalk {
public:
    explicit OffloadWalk(const World& world);
    std::uint32_t current() const { return id_; }  // kNone once every list is walked
    void advance();

private:
    void settle();  // onto the first entry at or after (list_, id_), with its successor noted
    const World& world_;
    std::size_t list_ = 0;
    std::uint32_t id_ = kNone;
    std::uint32_t next_ = kNone;
};
// Applies an enabled step (checked: a disabled one is a driver bug). For one-off steps (tests,
// writers of counterexamples); loops keep a model::Driver (model/driver.hpp), whose scratch
// buffers and outcome survive from step to step.
StepOutcome apply(World& world, const Step& step);
// apply() without its enabled() check, into an outcome the caller keeps (reset first) and with
// the caller's scratch: for a step enabled_steps has just offered for this same world (explorers
// apply millions) or that the driver found enabled itself (the simulator). The property tests
// walk apply over enabled_steps' offers, so the two are held to agree.
void apply_into(World& world, const Step& step, StepOutcome& out, Scratch& scratch);

// Every enabled step whose kind is in `kinds` (a bit per StepKind), in a canonical order.
// Segment-targeted steps are offered for the oldest candidates of each eviction list only (one
// list per group, tails apart): evictions and offloads for the kEvictionChoices least recently
// used, faults for the least recently used one. An LRU evictor behaves so; it bounds branching
// while keeping every group and form reachable. A partial load is offered only to a policy
// without the load-length check: with it, a partial load is a failed load and leads to the very
// state io_fail leads to, which is offered already.
inline constexpr std::size_t kEvictionChoices = 1;
void enabled_steps(const World& world, std::uint32_t kinds, std::vector<Step>& out);
inline constexpr std::uint32_t kind_bit(StepKind k) { return 1u << static_cast<unsigned>(k); }

// A readable one-line description, e.g. "evict compressed_kv seg 3 [0,64) of group c4".
std::string describe(const World& world, const Step& step);

// How messages name the request in slot `r`: "request U" by its spec's uid (a simulator's arrival
// number, an explorer's request index), with the slot added where the two differ, as a simulator
// recycles the slots of finished requests: "request 16 (slot 2)".
std::string request_name(const World& world, std::uint32_t r);

}  // namespace kvcheck::model
