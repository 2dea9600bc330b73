// The reads a correct resume performs: for every group exactly the region the next query reads
// (its live region at resume_len), computed from the request's own tokens under the current
// weights and written in the reader's layout. Tests and examples start here and break one thing.
#pragma once

#include <vector>

#include "sim/format/schedule.hpp"

namespace kvcheck::replay {

std::vector<Read> clean_reads(const Schedule& schedule);

// A schedule for `config` that resumes `tokens` at `resume_len` from clean reads; the oracle
// says clean. Layouts are the groups' layout ids.
Schedule clean_schedule(const model::ModelConfig& config, std::vector<int> tokens, int resume_len,
                        std::uint64_t weights_version, int prefill_chunk_tokens, int decode_steps);

}  // namespace kvcheck::replay
