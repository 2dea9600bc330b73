// Symmetry reduction for the explorer: segment ids are names, not behaviour. No step, offer or
// invariant of the model depends on a segment id's value (ids come from a LIFO free list the
// state hash already leaves out), so two worlds that differ only by a renaming of segment ids
// have the same futures up to that renaming, and the explorer may visit one of them.
#pragma once

#include <cstdint>
#include <vector>

#include "model/world.hpp"

namespace kvcheck::sim {

// Hashes `world` as model::state_hash does, field for field, after renaming segment ids
// canonically: live segments by their contents (content key, group, form, range, slot, disk copy,
// stage), then dead ids still referenced (plans, pins, I/O, graphs) in order of first reference.
// Equal for worlds equal up to a renaming; `labels` is scratch space reused between calls.
std::uint64_t canonical_state_hash(const model::World& world, std::vector<std::uint32_t>& labels);

}  // namespace kvcheck::sim
