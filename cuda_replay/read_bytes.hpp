// What one schedule read puts into the resumed cache: the rows its source wrote, storage damage,
// the writer's layout, a real trip through host memory and a temporary file, a misaligned base
// address, and the reader's layout; then the rows land at the positions the reader claims.
#pragma once

#include <vector>

#include "cuda_replay/backend.hpp"
#include "sim/format/schedule.hpp"

namespace kvcheck::replay {

// Logical rows of one read: [plane][row][kModel]. KV forms have two planes (K, V); index
// summaries and linear states one (a linear state is kHeadDim rows of (head, column) features).
struct ReadRows {
    int planes = 1;
    int rows = 0;
    std::vector<float> data;
};

// The rows a read of `form` over the claimed range [start, end) covers on a layer.
int claimed_rows(const LayerShape& shape, model::Form form, int start, int end);

// The rows the reader sees. `source_cache` is the cache of a run, under the source's weights, over
// a token list that starts with source.tokens[0:source.end] (for a linear state: exactly those
// tokens); only the rows a run over exactly source.end tokens writes are taken, the rest read as
// zeros. Null when the read has no source: an unregistered buffer holds zeros.
ReadRows rows_seen(const LayerShape& shape, const Read& read, const CacheState* source_cache, int reader_layout);

// Writes the rows at the positions the read claims; a linear state is used only when it claims
// exactly `resume_len`.
void place_rows(CacheState& cache, const LayerShape& shape, const Read& read, const ReadRows& rows, int resume_len);

// Layouts: odd ids store rows token-major ([row][feature]), even ids head-major ([head][row][dim]);
// every id also permutes the kModel features with a permutation seeded by the id, so any two
// different ids disagree even on a single row.
std::vector<float> encode_layout(const ReadRows& rows, int layout);
ReadRows decode_layout(const std::vector<float>& bytes, int planes, int rows, int layout);

// Copies the bytes out to a host buffer and a temporary file on "offload" and back into a fresh
// buffer on "load", for real; the result must equal the input bit for bit.
std::vector<float> carry(const std::vector<float>& bytes, const std::vector<Transport>& steps);

}  // namespace kvcheck::replay
