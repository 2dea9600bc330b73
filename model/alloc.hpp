// The allocator underneath the steps: per-form slot pools and free lists (RL2), the state table,
// admission within the GPU budget with eviction by form priority (RL1), and the disk tier's pool.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/world.hpp"

namespace kvcheck::model {

// Why an entry left the table or the GPU: to make room (admission, for a new entry or a load),
// released by its writer because no resume can read it (folded tails, SWA blocks that slid out,
// duplicates, shed extents), by an evict step (the explorer's evictor; faults F6, F7, F8, F10), or
// dropped from a full host/disk tier to take an offload (its only copy: Limits::tier_eviction).
enum class EvictionCause : std::uint8_t { admission, release, evict_step, tier_full };
inline constexpr int kEvictionCauseCount = 4;
std::string_view eviction_cause_name(EvictionCause cause);

struct Eviction {
    Form form;
    std::uint64_t bytes;
    EvictionCause cause = EvictionCause::admission;
    bool copy_kept = false;         // only the GPU copy went: a whole copy stays on host/disk, still registered
    std::uint32_t segment = kNone;  // the entry
    bool shed = false;              // only the blocks no resume reads went (shed): the entry stays on the GPU
    bool operator==(const Eviction&) const = default;
};

// Whether evicting the entry drops only its GPU copy: a whole copy sits on host/disk (evict_segment).
inline bool keeps_disk_copy(const Segment& s) { return s.disk != kNone && s.whole; }

// Evictions an admission caused, for metrics. Bounded by the number of evictable segments.
struct AdmissionLog {
    std::vector<Eviction> evicted;
    bool refused = false;
};

// Registers a new entry for [start, end) of a group (one unit, or an extent of several within one
// chunk) in the state table and gives it a GPU slot, evicting by form priority to stay within the
// budget. `writer` is the World::writers entry of the request writing it. Returns kNone when
// admission is refused (everything else pinned).
std::uint32_t create_segment(World& w, std::uint8_t group, Form form, std::uint32_t start, std::uint32_t end,
                             std::uint64_t key, std::uint32_t writer, AdmissionLog* log);

// Drops the blocks of an SWA entry that no resume reads, once its writer lets go of it; returns
// the GPU bytes that frees.
std::uint64_t shed(World& w, std::uint32_t id);

// Splits an extent at `at`, a unit boundary inside it: [start, at) stays entry id and [at, end)
// becomes a new entry with the same stage, versions, faults, residency and eviction age, each
// part holding its share of the slot's and the disk copy's content. Only a quiet extent splits
// (no pins, no graph references, ready or on disk with no transfer in flight, not a duplicate)
// and only while the budget has room for one more state-table entry. The first part keeps its
// epoch (a plan within it stays valid; one past `at` no longer fits the entry, World::holds_range,
// and revalidation and RL3 see that), the new one gets a fresh one. Returns the new entry, or
// kNone when the extent does not split.
std::uint32_t split_segment(World& w, std::uint32_t id, std::uint32_t at);

// Gives an existing (on-disk) segment a GPU slot again; false when admission is refused.
bool admit_slot(World& w, std::uint32_t id, AdmissionLog* log);

// Drops a segment entirely: unpublished, slot and disk copy freed, epoch bumped.
void free_segment(World& w, std::uint32_t id);

// The evictor's path: drops the GPU copy; the segment survives as on-disk when a disk copy exists.
void evict_segment(World& w, std::uint32_t id);

// Releases only the GPU slot of a segment (after an offload or a failed load).
void release_slot(World& w, std::uint32_t id);

void publish(World& w, std::uint32_t id);
void unpublish(World& w, std::uint32_t id);
void pin(World& w, std::uint32_t id);
void unpin(World& w, std::uint32_t id);
void touch(World& w, std::uint32_t id);

// Keeps the eviction candidate sets in step with a segment's pins, stage and residency: the GPU's
// lists, and with Limits::tier_eviction the host/disk tier's list.
void refresh_evictable(World& w, std::uint32_t id);

// Whether the host/disk tier can take `bytes` more: it has the room, or (Limits::tier_eviction)
// dropping entries from the head of its eviction list would make it.
bool tier_has_room(const World& w, std::uint64_t bytes);
// Drops entries from the head of the tier's eviction list until `bytes` more fit, each its last
// copy, logged in `evicted`. Needs tier_has_room(w, bytes).
void make_tier_room(World& w, std::uint64_t bytes, std::vector<Eviction>& evicted);
bool is_evictable(const World& w, const Segment& s);

// Moves a resident segment to a fresh slot of its pool (compaction, F10).
void relocate(World& w, std::uint32_t id);

std::uint32_t allocate_disk(World& w, std::uint32_t owner);
// Frees a host/disk copy, taking it out of host memory first when it rests there.
void free_disk(World& w, std::uint32_t id);
// Rests a new copy in host memory (Limits::host_capacity_bytes) when it fits there at all,
// moving the copies there longest to disk until it fits; returns how many it moved.
std::uint32_t place_copy(World& w, std::uint32_t id);

std::uint64_t canonical_address(Form pool, std::uint32_t slot);

}  // namespace kvcheck::model
