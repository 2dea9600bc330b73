// Transfers between the GPU and the disk tier: offloads, loads and their completion or failure,
// as the offload, lookup and I/O steps of model/steps.cpp start and finish them.
#pragma once

#include <cstdint>

#include "model/steps.hpp"

namespace kvcheck::model {

// The indexer group that indexes a KV group, 0xFF when none does.
std::uint8_t indexer_of(const World& w, std::uint8_t kv_group);

// Starts copying a resident segment to disk (its GPU copy stays until the copy completes).
void start_offload(World& w, std::uint32_t id, StepOutcome& out);

// Starts loading an on-disk segment for request r; false when it is not on disk or admission
// refuses it a slot.
bool start_load(World& w, std::uint32_t r, std::uint32_t id, StepOutcome& out);

// How an I/O operation ends: complete, failed (F2 error or timeout), a load into a misaligned
// staging buffer (F9), or a load that delivered only part of the segment's bytes (F2 partial).
enum class IoEnd : std::uint8_t { complete, failed, misaligned, partial };

// Completes or fails an I/O operation. A partial load fails when the load-length check is on;
// without it the segment becomes resident with torn content.
void finish_io(World& w, std::uint32_t op_id, IoEnd end, StepOutcome& out);

}  // namespace kvcheck::model
