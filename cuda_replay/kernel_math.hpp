// Shared arithmetic of the tiny model. Every function here runs unchanged in the CPU reference and
// inside the CUDA kernels, so both backends perform the same operations in the same order; only
// plain IEEE +, -, *, / and sqrt are used (exp is computed from them), never a library exp.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define KV_HD __host__ __device__
#else
#define KV_HD
#endif

namespace kvcheck::replay {

inline constexpr int kVocab = 256;
inline constexpr int kModel = 32;  // d_model
inline constexpr int kHeads = 2;
inline constexpr int kHeadDim = 16;
inline constexpr int kSplitEntries = 64;       // fixed split size of every attention reduction
inline constexpr float kScoreScale = 0.25f;    // 1 / sqrt(kHeadDim), exact in binary
inline constexpr float kIndexScale = 0.125f;   // indexer block scores
inline constexpr float kLinearDecay = 0.875f;  // linear-attention state decay per token
inline constexpr float kNormEpsilon = 1.0f / 65536.0f;
static_assert(kHeads * kHeadDim == kModel, "heads must tile the model width");

// How a layer attends; mirrors model::GroupKind but is usable in device code.
enum class LayerKind : std::int32_t { full, swa, chunked, indexer, linear };

// The per-layer numbers the kernels need, copied from the schedule's cache group.
struct LayerShape {
    LayerKind kind = LayerKind::full;
    std::int32_t block_tokens = 16;
    std::int32_t segment_tokens = 16;
    std::int32_t window_tokens = 0;
    std::int32_t ratio = 1;  // compress_ratio of full layers
    std::int32_t top_k = 0;  // indexer
};

// floor and sqrt are exact (correctly rounded) on both sides; the wrappers pick the spelling.
KV_HD inline float floor_f(float x) {
#if defined(__CUDA_ARCH__)
    return floorf(x);
#else
    return std::floor(x);
#endif
}

KV_HD inline float sqrt_f(float x) {
#if defined(__CUDA_ARCH__)
    return __fsqrt_rn(x);
#else
    return std::sqrt(x);
#endif
}

KV_HD inline float float_from_bits(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    return std::bit_cast<float>(bits);
#endif
}

// exp(x) for x <= 0 from range reduction and a degree-6 polynomial; identical bits on every IEEE
// machine when multiply-add contraction is off (-ffp-contract=off, nvcc --fmad=false). Below -87
// the result is 0. Branch-free (the argument is clamped, the result selected), so the CPU
// backend's compiler can evaluate it for a whole split of lanes at once; for x >= -87 the
// operations are exactly those of the straightforward version.
KV_HD inline float exp_portable(float x) {
    const bool underflow = x < -87.0f;
    x = underflow ? -87.0f : x;
    const float n = floor_f(x * 1.44269504f + 0.5f);
    float r = x - n * 0.693145752f;
    r = r - n * 1.42860677e-6f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    // 2^n by building the exponent field; n lies in [-126, 0] for the arguments used here.
    const std::int32_t e = static_cast<std::int32_t>(n) + 127;
    const float result = p * float_from_bits(static_cast<std::uint32_t>(e) << 23);
    return underflow ? 0.0f : result;
}

KV_HD inline float dot(const float* a, const float* b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s = s + a[i] * b[i];
    return s;
}

// RMS normalisation without learned scale: out = x / sqrt(mean(x^2) + eps).
KV_HD inline void normalize(const float* x, float* out) {
    float s = 0.0f;
    for (int i = 0; i < kModel; ++i) s = s + x[i] * x[i];
    const float scale = 1.0f / sqrt_f(s * (1.0f / static_cast<float>(kModel)) + kNormEpsilon);
    for (int i = 0; i < kModel; ++i) out[i] = x[i] * scale;
}

// A fixed, integer-derived positional signal in [-0.25, 0.25) added to the token embedding.
KV_HD inline float position_feature(int position, int feature) {
    std::uint64_t x = static_cast<std::uint64_t>(position) * 64u + static_cast<std::uint64_t>(feature);
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x = x ^ (x >> 31);
    return static_cast<float>(static_cast<std::int32_t>(x >> 56) - 128) * (1.0f / 512.0f);
}

// Mean of `count` rows of kModel floats, one feature; sum in row order, then one multiply.
KV_HD inline float mean_rows(const float* rows, int count, int feature) {
    float s = 0.0f;
    for (int j = 0; j < count; ++j) s = s + rows[j * kModel + feature];
    return s * (1.0f / static_cast<float>(count));
}

// The entries one query attends: rows [0, n0) of (k0, v0) followed by rows [0, n1) of (k1, v1).
struct EntryList {
    const float* k0 = nullptr;
    const float* v0 = nullptr;
    int n0 = 0;
    const float* k1 = nullptr;
    const float* v1 = nullptr;
    int n1 = 0;
};

// One layer's cache as the attention reads it (host or device pointers).
struct KvView {
    const float* raw_k = nullptr;  // [token][kModel]
    const float* raw_v = nullptr;
    const float* comp_k = nullptr;  // [entry][kModel]
    const float* comp_v = nullptr;
};

KV_HD inline EntryList raw_range(const KvView& kv, int begin, int end) {
    return {kv.raw_k + begin * kModel, kv.raw_v + begin * kModel, end - begin, nullptr, nullptr, 0};
}

KV_HD inline int max_int(int a, int b) { return a > b ? a : b; }
KV_HD inline int min_int(int a, int b) { return a < b ? a : b; }

// What the query at `position` of a full, swa or chunked layer attends (the cache after
// position + 1 tokens): full layers see the compressed entries of completed segments followed by
// the raw rows since the last boundary; swa the last window_tokens positions and itself; chunked
// the positions of its own chunk.
KV_HD inline EntryList attention_list(const LayerShape& s, const KvView& kv, int position) {
    if (s.kind == LayerKind::swa) return raw_range(kv, max_int(0, position - s.window_tokens), position + 1);
    if (s.kind == LayerKind::chunked) return raw_range(kv, position / s.window_tokens * s.window_tokens, position + 1);
    const int boundary = (position + 1) / s.segment_tokens * s.segment_tokens;
    return {kv.comp_k,
            kv.comp_v,
            boundary / s.ratio,
            kv.raw_k + boundary * kModel,
            kv.raw_v + boundary * kModel,
            position + 1 - boundary};
}

// The entries of one completed block of an indexed full layer (its segment equals its block).
KV_HD inline EntryList block_list(const LayerShape& indexed, const KvView& kv, int block) {
    const int per_block = indexed.block_tokens / indexed.ratio;
    return {
        kv.comp_k + block * per_block * kModel, kv.comp_v + block * per_block * kModel, per_block, nullptr, nullptr, 0};
}

KV_HD inline int entry_count(const EntryList& l) { return l.n0 + l.n1; }
KV_HD inline int split_count(int entries) { return (entries + kSplitEntries - 1) / kSplitEntries; }

KV_HD inline float entry_score(const float* q_head, const EntryList& l, int head, int i) {
    const float* k = i < l.n0 ? l.k0 + i * kModel : l.k1 + (i - l.n0) * kModel;
    return dot(q_head, k + head * kHeadDim, kHeadDim) * kScoreScale;
}

KV_HD inline const float* entry_value(const EntryList& l, int head, int i) {
    return (i < l.n0 ? l.v0 + i * kModel : l.v1 + (i - l.n0) * kModel) + head * kHeadDim;
}

// Softmax statistics of one split of kSplitEntries entries (two passes: max, then sums).
struct Partial {
    float max;
    float sum;
    float acc[kHeadDim];
};

KV_HD inline void attend_split(const float* q_head, const EntryList& l, int head, int split, Partial& out) {
    const int begin = split * kSplitEntries;
    const int end = min_int(begin + kSplitEntries, entry_count(l));
    float m = entry_score(q_head, l, head, begin);
    for (int i = begin + 1; i < end; ++i) {
        const float s = entry_score(q_head, l, head, i);
        m = s > m ? s : m;
    }
    out.max = m;
    out.sum = 0.0f;
    for (int d = 0; d < kHeadDim; ++d) out.acc[d] = 0.0f;
    for (int i = begin; i < end; ++i) {
        const float w = exp_portable(entry_score(q_head, l, head, i) - m);
        const float* v = entry_value(l, head, i);
        out.sum = out.sum + w;
        for (int d = 0; d < kHeadDim; ++d) out.acc[d] = out.acc[d] + w * v[d];
    }
}

// Combines split statistics in split order into the head's attention output.
KV_HD inline void merge_splits(const Partial* parts, int count, float* out) {
    float m = parts[0].max;
    for (int s = 1; s < count; ++s) m = parts[s].max > m ? parts[s].max : m;
    float sum = 0.0f;
    float acc[kHeadDim];
    for (int d = 0; d < kHeadDim; ++d) acc[d] = 0.0f;
    for (int s = 0; s < count; ++s) {
        const float c = exp_portable(parts[s].max - m);
        sum = sum + parts[s].sum * c;
        for (int d = 0; d < kHeadDim; ++d) acc[d] = acc[d] + parts[s].acc[d] * c;
    }
    for (int d = 0; d < kHeadDim; ++d) out[d] = acc[d] / sum;
}

// Indexer: block score, softmax statistics over every candidate block, and top-k membership by
// rank (score descending, lower block number first on ties); no sort, no scratch memory.
KV_HD inline float index_score(const float* qi, const float* summaries, int block) {
    return dot(qi, summaries + block * kModel, kModel) * kIndexScale;
}

KV_HD inline float index_max(const float* qi, const float* summaries, int candidates) {
    float m = index_score(qi, summaries, 0);
    for (int b = 1; b < candidates; ++b) {
        const float s = index_score(qi, summaries, b);
        m = s > m ? s : m;
    }
    return m;
}

KV_HD inline float index_normaliser(const float* qi, const float* summaries, int candidates, float max) {
    float z = 0.0f;
    for (int b = 0; b < candidates; ++b) z = z + exp_portable(index_score(qi, summaries, b) - max);
    return z;
}

KV_HD inline bool index_selected(const float* qi, const float* summaries, int candidates, int top_k, int block) {
    if (candidates <= top_k) return true;
    const float mine = index_score(qi, summaries, block);
    int better = 0;
    for (int b = 0; b < candidates && better < top_k; ++b) {
        const float s = index_score(qi, summaries, b);
        if (s > mine || (s == mine && b < block)) ++better;
    }
    return better < top_k;
}

// One token of the linear-attention recurrence for one head and one state column:
// S[i][column] = decay * S[i][column] + k[i] * v[column]; returns sum_i q[i] * S[i][column].
KV_HD inline float linear_column_step(float* state_head, const float* q_head, const float* k_head, const float* v_head,
                                      int column) {
    float out = 0.0f;
    for (int i = 0; i < kHeadDim; ++i) {
        float& cell = state_head[i * kHeadDim + column];
        cell = cell * kLinearDecay + k_head[i] * v_head[column];
        out = out + q_head[i] * cell;
    }
    return out;
}

}  // namespace kvcheck::replay
