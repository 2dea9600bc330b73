// The fast path's kernels (cpu_lanes.hpp). Built with -ffp-contract=off like all of
// cuda_replay, and with -fno-trapping-math (CMakeLists.txt) so that GCC vectorises
// exp_portable's floor over a split's 64 lanes.
#include "cuda_replay/cpu_lanes.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define KV_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define KV_CPU_DISPATCH 1
#else
#define KV_CPU_CLONES
#endif
// Helpers of the cloned functions are inlined into each clone, so they are compiled for its target.
#if defined(__GNUC__)
#define KV_CPU_INLINE inline __attribute__((always_inline))
#else
#define KV_CPU_INLINE inline
#endif

namespace kvcheck::replay::lanes {

void split_runs(const Run& a, const Run& b, std::vector<Split>& out) {
    const int total = a.n + b.n;
    for (int begin = 0; begin < total; begin += kSplitEntries) {
        const int end = std::min(begin + kSplitEntries, total);
        Split s;
        s.n = end - begin;
        if (begin < a.n) s.part[s.parts++] = Run{a.keys, a.values, a.row + begin, std::min(end, a.n) - begin};
        if (end > a.n) {
            const int from = std::max(begin, a.n) - a.n;
            s.part[s.parts++] = Run{b.keys, b.values, b.row + from, end - a.n - from};
        }
        out.push_back(s);
    }
}

namespace {

// W floats as one value: element-wise IEEE operations in one native vector register of the
// target the kernel is compiled for (W = 16 for AVX-512, 8 for AVX2, 4 for SSE2). Loads and stores
// go through memcpy.
template <int W>
struct VectorOf {
    typedef float type __attribute__((vector_size(W * sizeof(float))));
};
template <int W>
using Lanes = typename VectorOf<W>::type;

// (Vectors are never passed or returned by value: outside their own target that changes the ABI.)
template <int W>
KV_CPU_INLINE void load(Lanes<W>& x, const float* p) {
    std::memcpy(&x, p, sizeof x);
}

// Scores of 64 consecutive rows starting at `first` for one head: lane e is
// dot(q_head, k[first + e] + head * kHeadDim, kHeadDim) * kScoreScale, summed in the same order.
template <int W>
KV_CPU_INLINE void lane_scores(const float* q_head, const KeysT& keys, int head, int first, float* out) {
    constexpr int kBlocks = kSplitEntries / W;
    Lanes<W> s[kBlocks];
    for (int b = 0; b < kBlocks; ++b) s[b] = Lanes<W>{};
    for (int i = 0; i < kHeadDim; ++i) {
        const float qi = q_head[i];
        const float* column = keys.column(head * kHeadDim + i) + first;
        for (int b = 0; b < kBlocks; ++b) {
            Lanes<W> k;
            load<W>(k, column + W * b);
            s[b] = s[b] + qi * k;
        }
    }
    for (int b = 0; b < kBlocks; ++b) {
        const Lanes<W> scaled = s[b] * kScoreScale;
        std::memcpy(out + W * b, &scaled, sizeof scaled);
    }
}

// The maximum of sc[0, n). Its value does not depend on the order it is taken in (scores are
// finite; only the sign of a zero maximum could differ, and neither s - m nor exp sees that).
template <int W>
KV_CPU_INLINE float lane_max(float* sc, int n) {
    for (int e = n; e < kSplitEntries; ++e) sc[e] = -std::numeric_limits<float>::infinity();
    Lanes<W> m;
    load<W>(m, sc);
    for (int e = W; e < kSplitEntries; e += W) {
        Lanes<W> x;
        load<W>(x, sc + e);
        m = x > m ? x : m;
    }
    float lanes[W];
    std::memcpy(lanes, &m, sizeof lanes);
    float max = lanes[0];
    for (int l = 1; l < W; ++l) max = lanes[l] > max ? lanes[l] : max;
    return max;
}

// The Partial of one split for both heads: the same values attend_split computes, head by head.
template <int W>
KV_CPU_INLINE void split_partials(const float* q, const Split& sp, Partial* out /* [kHeads] */) {
    alignas(64) float w[kHeads][kSplitEntries];
    for (int head = 0; head < kHeads; ++head) {
        float* sc = w[head];
        const float* q_head = q + head * kHeadDim;
        lane_scores<W>(q_head, *sp.part[0].keys, head, sp.part[0].row, sc);
        if (sp.parts == 2) {
            alignas(64) float second[kSplitEntries];
            lane_scores<W>(q_head, *sp.part[1].keys, head, sp.part[1].row, second);
            const int offset = sp.part[0].n;
            for (int e = 0; e < sp.part[1].n; ++e) sc[offset + e] = second[e];
        }
        const float m = lane_max<W>(sc, sp.n);
        out[head].max = m;
        for (int e = 0; e < kSplitEntries; ++e) sc[e] = exp_portable(sc[e] - m);
    }
    // Sequential over the entries, as attend_split: the 16 dimensions of a head are the lanes.
    constexpr int kPerHead = kHeadDim / W;
    Lanes<W> acc[kHeads][kPerHead];
    for (int head = 0; head < kHeads; ++head)
        for (int b = 0; b < kPerHead; ++b) acc[head][b] = Lanes<W>{};
    float sum0 = 0.0f;
    float sum1 = 0.0f;
    int e = 0;
    for (int p = 0; p < sp.parts; ++p) {
        const Run& run = sp.part[p];
        const float* v = run.values + static_cast<std::size_t>(run.row) * kModel;
        for (int i = 0; i < run.n; ++i, ++e, v += kModel) {
            const float w0 = w[0][e];
            const float w1 = w[1][e];
            sum0 = sum0 + w0;
            sum1 = sum1 + w1;
            for (int b = 0; b < kPerHead; ++b) {
                Lanes<W> v0;
                Lanes<W> v1;
                load<W>(v0, v + W * b);
                load<W>(v1, v + kHeadDim + W * b);
                acc[0][b] = acc[0][b] + w0 * v0;
                acc[1][b] = acc[1][b] + w1 * v1;
            }
        }
    }
    for (int head = 0; head < kHeads; ++head) std::memcpy(out[head].acc, acc[head], sizeof acc[head]);
    out[0].sum = sum0;
    out[1].sum = sum1;
}

// Partials of `count` splits for both heads: out[split * kHeads + head]. One instantiation per
// vector width, each compiled for the instruction set whose registers hold that width; the widest
// the CPU supports is picked once. Every instantiation computes the same bits.
template <int W>
KV_CPU_INLINE void partials_with(const float* q, const Split* splits, int count, Partial* out) {
    static_assert(kHeadDim % W == 0 && kSplitEntries % W == 0, "lanes tile a head and a split");
    for (int s = 0; s < count; ++s) split_partials<W>(q, splits[s], out + static_cast<std::ptrdiff_t>(s) * kHeads);
}

using PartialsFn = void (*)(const float*, const Split*, int, Partial*);

void partials_baseline(const float* q, const Split* splits, int count, Partial* out) {
    partials_with<4>(q, splits, count, out);
}

#if defined(KV_CPU_DISPATCH)
__attribute__((target("avx2"))) void partials_avx2(const float* q, const Split* splits, int count, Partial* out) {
    partials_with<8>(q, splits, count, out);
}
__attribute__((target("avx512f"))) void partials_avx512(const float* q, const Split* splits, int count, Partial* out) {
    partials_with<16>(q, splits, count, out);
}
#endif

// The widest instruction set the CPU supports, lowered by KVCHECK_REPLAY_ISA=avx2 or baseline (so
// tests can check every width on one machine; it never raises the choice).
PartialsFn pick_partials() {
#if defined(KV_CPU_DISPATCH)
    const char* cap = std::getenv("KVCHECK_REPLAY_ISA");
    const std::string_view limit = cap != nullptr ? cap : "";
    __builtin_cpu_init();
    if (limit != "avx2" && limit != "baseline" && __builtin_cpu_supports("avx512f")) return partials_avx512;
    if (limit != "baseline" && __builtin_cpu_supports("avx2")) return partials_avx2;
#endif
    return partials_baseline;
}

// out[t][j] = dot(w[j], x[t], kModel) for `rows` outputs, with wt = w transposed ([i][j]).
template <int Rows>
KV_CPU_INLINE void project_rows(const float* wt, const float* x, float* out) {
    float acc[Rows];
    for (int j = 0; j < Rows; ++j) acc[j] = 0.0f;
    for (int i = 0; i < kModel; ++i) {
        const float xi = x[i];
        const float* w = wt + static_cast<std::ptrdiff_t>(i) * Rows;
        for (int j = 0; j < Rows; ++j) acc[j] = acc[j] + w[j] * xi;
    }
    for (int j = 0; j < Rows; ++j) out[j] = acc[j];
}

}  // namespace

void partials_of(const float* q, const Split* splits, int count, Partial* out) {
    static const PartialsFn kPartials = pick_partials();
    kPartials(q, splits, count, out);
}

KV_CPU_CLONES void project_tokens(const float* wt, const float* h, int count, float* q, float* k, float* v, float* qi) {
    for (int t = 0; t < count; ++t) {
        float xn[kModel];
        normalize(h + static_cast<std::ptrdiff_t>(t) * kModel, xn);
        float out[4 * kModel];
        project_rows<4 * kModel>(wt, xn, out);
        const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(t) * kModel;
        std::copy_n(out, kModel, q + at);
        std::copy_n(out + kModel, kModel, k + at);
        std::copy_n(out + 2 * kModel, kModel, v + at);
        std::copy_n(out + 3 * kModel, kModel, qi + at);
    }
}

KV_CPU_CLONES void output_tokens(const float* wot, const float* a, int count, float* h) {
    for (int t = 0; t < count; ++t) {
        float out[kModel];
        project_rows<kModel>(wot, a + static_cast<std::ptrdiff_t>(t) * kModel, out);
        float* ht = h + static_cast<std::ptrdiff_t>(t) * kModel;
        for (int j = 0; j < kModel; ++j) ht[j] = ht[j] + out[j];
    }
}

KV_CPU_CLONES void logits_of(const float* ut, const float* xn, float* logits) { project_rows<kVocab>(ut, xn, logits); }

void transpose_into(const std::vector<float>& m, int rows, int width, int offset, std::vector<float>& out) {
    for (int j = 0; j < rows; ++j)
        for (int i = 0; i < kModel; ++i)
            out[static_cast<std::size_t>(i) * static_cast<std::size_t>(width) + static_cast<std::size_t>(offset + j)] =
                m[static_cast<std::size_t>(j) * kModel + static_cast<std::size_t>(i)];
}

}  // namespace kvcheck::replay::lanes
