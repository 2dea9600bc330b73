// CPU reference backend: fp32 throughout, the fixed split-size reductions of kernel_math.hpp, and
// no multiply-add contraction (-ffp-contract=off). A chunk is processed layer by layer, in the
// same order of operations as the CUDA kernels.
//
// Two implementations of the same arithmetic:
// - scalar (make_cpu_scalar_backend): calls the kernel_math.hpp functions exactly as the CUDA
//   kernels do, one (query, head, split) at a time. Slow, obviously equal to the GPU's order.
// - fast (make_cpu_backend, the default): the same operations on the same operands in the same
//   order per result, laid out so the compiler can run independent results in SIMD lanes. Keys
//   are mirrored transposed ([feature][row]) so the 64 scores of a split are 64 lanes, each one
//   the sequential 16-term dot of the scalar path; every score is computed once (the scalar path
//   computes it twice, for the max and for the weight); exp runs over the 64 lanes (kernel_math's
//   exp_portable is branch-free for this); the weighted sums stay sequential over the entries of
//   a split, with the 16 dimensions of a head as lanes and both heads in one pass; projections
//   use transposed weights so the 32 (or 256) outputs are lanes of sequential dots. No result is
//   reassociated, so the two paths agree bit for bit (tests/replay_test.cpp checks it). The hot
//   functions (cpu_lanes.cpp) are compiled for AVX-512, AVX2 and baseline x86-64 and picked at
//   run time; vector width never changes an IEEE result, and -ffp-contract=off holds in every
//   clone.
#include <algorithm>
#include <string_view>

#include "cuda_replay/backend.hpp"
#include "cuda_replay/cpu_lanes.hpp"
#include "model/core.hpp"

namespace kvcheck::replay {

namespace {

using lanes::KeysT;
using lanes::logits_of;
using lanes::output_tokens;
using lanes::partials_of;
using lanes::project_tokens;
using lanes::Run;
using lanes::Split;
using lanes::split_runs;
using lanes::transpose_into;

KvView view_of(const GroupCache& g) {
    return {g.raw_k.empty() ? nullptr : g.raw_k.data(), g.raw_v.empty() ? nullptr : g.raw_v.data(),
            g.comp_k.empty() ? nullptr : g.comp_k.data(), g.comp_v.empty() ? nullptr : g.comp_v.data()};
}

bool same_shape(const CacheState& a, const CacheState& b) {
    if (a.capacity != b.capacity || a.groups.size() != b.groups.size()) return false;
    for (std::size_t i = 0; i < a.groups.size(); ++i) {
        const GroupCache& x = a.groups[i];
        const GroupCache& y = b.groups[i];
        if (x.raw_k.size() != y.raw_k.size() || x.raw_v.size() != y.raw_v.size() ||
            x.comp_k.size() != y.comp_k.size() || x.comp_v.size() != y.comp_v.size() ||
            x.summary.size() != y.summary.size() || x.state.size() != y.state.size())
            return false;
    }
    return true;
}

float* row(std::vector<float>& v, int index) { return v.data() + static_cast<std::ptrdiff_t>(index) * kModel; }
const float* row(const std::vector<float>& v, int index) {
    return v.data() + static_cast<std::ptrdiff_t>(index) * kModel;
}

// ---- the session ----

class CpuSession final : public Session {
public:
    CpuSession(const TinyModel& model, int capacity, bool fast)
        : model_(model), cache_(empty_cache(model.layers(), capacity)), fast_(fast) {
        if (!fast_) return;
        const int layers = model_.layer_count();
        keys_raw_.resize(static_cast<std::size_t>(layers));
        keys_comp_.resize(static_cast<std::size_t>(layers));
        projections_t_.resize(static_cast<std::size_t>(layers));
        output_t_.resize(static_cast<std::size_t>(layers));
        for (int l = 0; l < layers; ++l) {
            const LayerWeights& w = model_.weights(l);
            auto& p = projections_t_[static_cast<std::size_t>(l)];
            p.assign(std::size_t{4} * kModel * kModel, 0.0f);
            transpose_into(w.wq, kModel, 4 * kModel, 0, p);
            transpose_into(w.wk, kModel, 4 * kModel, kModel, p);
            transpose_into(w.wv, kModel, 4 * kModel, 2 * kModel, p);
            transpose_into(w.wiq, kModel, 4 * kModel, 3 * kModel, p);
            auto& o = output_t_[static_cast<std::size_t>(l)];
            o.assign(std::size_t{kModel} * kModel, 0.0f);
            transpose_into(w.wo, kModel, kModel, 0, o);
        }
        unembedding_t_.assign(static_cast<std::size_t>(kVocab) * kModel, 0.0f);
        transpose_into(model_.unembedding(), kVocab, kVocab, 0, unembedding_t_);
        rebuild_keys();
    }

    int length() const override { return cache_.length; }

    void load(const CacheState& cache) override {
        KV_ASSERT(same_shape(cache, cache_), "load() needs a cache of the session's shape");
        KV_ASSERT(cache.length >= 0 && cache.length <= cache.capacity, "cache length out of range");
        cache_ = cache;
        if (fast_) rebuild_keys();
    }

    CacheState save() const override { return cache_; }

    std::vector<float> prefill(std::span<const int> tokens, std::vector<float>& hidden) override;

    std::vector<float> decode(int token, std::vector<float>& hidden) override {
        return prefill(std::span<const int>(&token, 1), hidden);
    }

    void migrate(int layer) override {
        KV_ASSERT(layer >= 0 && layer < model_.layer_count(), "migrate() of a layer that does not exist");
        GroupCache& g = cache_.groups[static_cast<std::size_t>(layer)];
        for (std::vector<float>* buffer : {&g.raw_k, &g.raw_v, &g.comp_k, &g.comp_v, &g.summary, &g.state}) {
            std::vector<float> moved(buffer->begin(), buffer->end());  // allocated while the old one lives
            buffer->swap(moved);
        }
    }

    int recaptures() const override { return 0; }

private:
    void rebuild_keys() {
        for (std::size_t l = 0; l < cache_.groups.size(); ++l) {
            keys_raw_[l].rebuild(cache_.groups[l].raw_k);
            keys_comp_[l].rebuild(cache_.groups[l].comp_k);
        }
    }
    void run_layer(int layer, int first, int count, std::vector<float>& h);
    void attend_scalar(const float* q_head, const EntryList& list, int head, float* out);
    void attend_indexer_scalar(int layer, int position, const float* q, const float* qi, float* out);
    void attend_fast(int layer, int first, int count, const std::vector<float>& q, std::vector<float>& a);
    void attend_indexer_fast(int layer, int position, const float* q, const float* qi, float* out);
    // Merges partials [from, to) (both heads interleaved) into out[kModel].
    void merge_range(int from, int to, float* out);

    TinyModel model_;
    CacheState cache_;
    bool fast_;
    std::vector<Partial> partials_;
    // fast path only
    std::vector<KeysT> keys_raw_, keys_comp_;
    std::vector<std::vector<float>> projections_t_, output_t_;
    std::vector<float> unembedding_t_;
    std::vector<Split> splits_;
    std::vector<Partial> merge_scratch_;
};

std::vector<float> CpuSession::prefill(std::span<const int> tokens, std::vector<float>& hidden) {
    const int first = cache_.length;
    const int count = static_cast<int>(tokens.size());
    KV_ASSERT(count > 0, "prefill() of no tokens");
    KV_ASSERT(first + count <= cache_.capacity, "prefill() beyond the session's capacity");
    const int layers = model_.layer_count();
    std::vector<float> h(static_cast<std::size_t>(count) * kModel);
    for (int t = 0; t < count; ++t) {
        const int token = tokens[static_cast<std::size_t>(t)];
        KV_ASSERT(token >= 0 && token < kVocab, "token id out of range");
        for (int f = 0; f < kModel; ++f)
            row(h, t)[f] = row(model_.embedding(), token)[f] + position_feature(first + t, f);
    }
    const std::size_t base = hidden.size();
    hidden.resize(base + static_cast<std::size_t>(count) * static_cast<std::size_t>(layers) * kModel);
    for (int l = 0; l < layers; ++l) {
        run_layer(l, first, count, h);
        for (int t = 0; t < count; ++t)
            std::copy_n(row(h, t), kModel, hidden.data() + base + (static_cast<std::size_t>(t) * layers + l) * kModel);
    }
    cache_.length += count;
    float xn[kModel];
    normalize(row(h, count - 1), xn);
    std::vector<float> logits(kVocab);
    if (fast_) {
        logits_of(unembedding_t_.data(), xn, logits.data());
    } else {
        for (int v = 0; v < kVocab; ++v)
            logits[static_cast<std::size_t>(v)] = dot(row(model_.unembedding(), v), xn, kModel);
    }
    return logits;
}

void CpuSession::run_layer(int layer, int first, int count, std::vector<float>& h) {
    const LayerSpec& spec = model_.layers()[static_cast<std::size_t>(layer)];
    const LayerShape& s = spec.shape;
    const LayerWeights& w = model_.weights(layer);
    const auto l = static_cast<std::size_t>(layer);
    GroupCache& g = cache_.groups[l];
    const std::size_t n = static_cast<std::size_t>(count) * kModel;
    std::vector<float> q(n), k(n), v(n), qi(n), a(n);
    if (fast_) {
        project_tokens(projections_t_[l].data(), h.data(), count, q.data(), k.data(), v.data(), qi.data());
    } else {
        for (int t = 0; t < count; ++t) {
            float xn[kModel];
            normalize(row(h, t), xn);
            for (int j = 0; j < kModel; ++j) {
                row(q, t)[j] = dot(row(w.wq, j), xn, kModel);
                row(k, t)[j] = dot(row(w.wk, j), xn, kModel);
                row(v, t)[j] = dot(row(w.wv, j), xn, kModel);
                row(qi, t)[j] = dot(row(w.wiq, j), xn, kModel);
            }
        }
    }
    switch (s.kind) {
        case LayerKind::full:
        case LayerKind::swa:
        case LayerKind::chunked:
            for (int t = 0; t < count; ++t) {
                std::copy_n(row(k, t), kModel, row(g.raw_k, first + t));
                std::copy_n(row(v, t), kModel, row(g.raw_v, first + t));
                if (fast_) keys_raw_[l].put(first + t, row(k, t));
            }
            if (s.kind == LayerKind::full) {
                // A segment is compressed when its last token is written: each entry is the mean
                // of `ratio` consecutive raw rows.
                for (int t = 0; t < count; ++t) {
                    const int end = first + t + 1;
                    if (end % s.segment_tokens != 0) continue;
                    for (int e = (end - s.segment_tokens) / s.ratio; e < end / s.ratio; ++e) {
                        for (int f = 0; f < kModel; ++f) {
                            row(g.comp_k, e)[f] = mean_rows(row(g.raw_k, e * s.ratio), s.ratio, f);
                            row(g.comp_v, e)[f] = mean_rows(row(g.raw_v, e * s.ratio), s.ratio, f);
                        }
                        if (fast_) keys_comp_[l].put(e, row(g.comp_k, e));
                    }
                }
            }
            if (fast_) {
                attend_fast(layer, first, count, q, a);
                break;
            }
            for (int t = 0; t < count; ++t) {
                const EntryList list = attention_list(s, view_of(g), first + t);
                for (int head = 0; head < kHeads; ++head)
                    attend_scalar(row(q, t) + head * kHeadDim, list, head, row(a, t) + head * kHeadDim);
            }
            break;
        case LayerKind::indexer: {
            // A block's summary is built when its last token is written, from the indexed
            // layer's raw keys of that block.
            const GroupCache& indexed = cache_.groups[static_cast<std::size_t>(spec.indexed_layer)];
            for (int t = 0; t < count; ++t) {
                const int end = first + t + 1;
                if (end % s.block_tokens != 0) continue;
                const int block = end / s.block_tokens - 1;
                float mean[kModel];
                for (int f = 0; f < kModel; ++f)
                    mean[f] = mean_rows(row(indexed.raw_k, block * s.block_tokens), s.block_tokens, f);
                for (int j = 0; j < kModel; ++j) row(g.summary, block)[j] = dot(row(w.ws, j), mean, kModel);
            }
            for (int t = 0; t < count; ++t) {
                if (fast_)
                    attend_indexer_fast(layer, first + t, row(q, t), row(qi, t), row(a, t));
                else
                    attend_indexer_scalar(layer, first + t, row(q, t), row(qi, t), row(a, t));
            }
            break;
        }
        case LayerKind::linear:
            for (int t = 0; t < count; ++t)
                for (int head = 0; head < kHeads; ++head)
                    for (int column = 0; column < kHeadDim; ++column)
                        row(a, t)[head * kHeadDim + column] =
                            linear_column_step(g.state.data() + head * kHeadDim * kHeadDim, row(q, t) + head * kHeadDim,
                                               row(k, t) + head * kHeadDim, row(v, t) + head * kHeadDim, column);
            break;
    }
    if (fast_) {
        output_tokens(output_t_[l].data(), a.data(), count, h.data());
        return;
    }
    for (int t = 0; t < count; ++t)
        for (int j = 0; j < kModel; ++j) row(h, t)[j] = row(h, t)[j] + dot(row(w.wo, j), row(a, t), kModel);
}

void CpuSession::attend_scalar(const float* q_head, const EntryList& list, int head, float* out) {
    const int splits = split_count(entry_count(list));
    KV_ASSERT(splits > 0, "a query always attends at least one entry");
    partials_.resize(static_cast<std::size_t>(splits));
    for (int split = 0; split < splits; ++split)
        attend_split(q_head, list, head, split, partials_[static_cast<std::size_t>(split)]);
    merge_splits(partials_.data(), splits, out);
}

// The sparse layer: the query always attends its own block of the indexed layer's raw rows, plus
// the top-k earlier blocks by index score; each selected block's output is weighted by the softmax
// of its score over ALL candidate blocks, so every index entry enters the output.
void CpuSession::attend_indexer_scalar(int layer, int position, const float* q, const float* qi, float* out) {
    const LayerSpec& spec = model_.layers()[static_cast<std::size_t>(layer)];
    const LayerShape& indexed_shape = model_.layers()[static_cast<std::size_t>(spec.indexed_layer)].shape;
    const KvView indexed = view_of(cache_.groups[static_cast<std::size_t>(spec.indexed_layer)]);
    const float* summaries = cache_.groups[static_cast<std::size_t>(layer)].summary.data();
    const int block_tokens = spec.shape.block_tokens;
    const int candidates = position / block_tokens;
    const EntryList local = raw_range(indexed, candidates * block_tokens, position + 1);
    for (int head = 0; head < kHeads; ++head) attend_scalar(q + head * kHeadDim, local, head, out + head * kHeadDim);
    if (candidates == 0) return;
    const float max = index_max(qi, summaries, candidates);
    const float normaliser = index_normaliser(qi, summaries, candidates, max);
    for (int block = 0; block < candidates; ++block) {
        if (!index_selected(qi, summaries, candidates, spec.shape.top_k, block)) continue;
        const float weight = exp_portable(index_score(qi, summaries, block) - max) / normaliser;
        const EntryList list = block_list(indexed_shape, indexed, block);
        for (int head = 0; head < kHeads; ++head) {
            float part[kHeadDim];
            attend_scalar(q + head * kHeadDim, list, head, part);
            for (int d = 0; d < kHeadDim; ++d) out[head * kHeadDim + d] = out[head * kHeadDim + d] + weight * part[d];
        }
    }
}

void CpuSession::merge_range(int from, int to, float* out) {
    const int count = to - from;
    KV_ASSERT(count > 0, "a query always attends at least one entry");
    merge_scratch_.resize(static_cast<std::size_t>(count));
    for (int head = 0; head < kHeads; ++head) {
        for (int s = 0; s < count; ++s)
            merge_scratch_[static_cast<std::size_t>(s)] =
                partials_[static_cast<std::size_t>(from + s) * kHeads + static_cast<std::size_t>(head)];
        merge_splits(merge_scratch_.data(), count, out + head * kHeadDim);
    }
}

// Full, swa and chunked layers: the entries attention_list names, as runs of this layer's arrays.
void CpuSession::attend_fast(int layer, int first, int count, const std::vector<float>& q, std::vector<float>& a) {
    const auto l = static_cast<std::size_t>(layer);
    const LayerShape& s = model_.layers()[l].shape;
    const GroupCache& g = cache_.groups[l];
    const KvView view = view_of(g);
    for (int t = 0; t < count; ++t) {
        const EntryList list = attention_list(s, view, first + t);
        const auto raw_row = [&](const float* k) { return static_cast<int>((k - g.raw_k.data()) / kModel); };
        Run head_run;
        Run tail_run;
        if (s.kind == LayerKind::full) {
            head_run = Run{&keys_comp_[l], g.comp_v.data(), 0, list.n0};
            tail_run = Run{&keys_raw_[l], g.raw_v.data(), list.n1 > 0 ? raw_row(list.k1) : 0, list.n1};
        } else {
            head_run = Run{&keys_raw_[l], g.raw_v.data(), raw_row(list.k0), list.n0};
        }
        splits_.clear();
        split_runs(head_run, tail_run, splits_);
        partials_.resize(splits_.size() * kHeads);
        partials_of(row(q, t), splits_.data(), static_cast<int>(splits_.size()), partials_.data());
        merge_range(0, static_cast<int>(splits_.size()), row(a, t));
    }
}

// Same operations as attend_indexer_scalar, with every split of the local block and of the
// selected blocks computed in one pass, then merged and weighted in the scalar order.
void CpuSession::attend_indexer_fast(int layer, int position, const float* q, const float* qi, float* out) {
    const LayerSpec& spec = model_.layers()[static_cast<std::size_t>(layer)];
    const auto kv = static_cast<std::size_t>(spec.indexed_layer);
    const LayerShape& indexed_shape = model_.layers()[kv].shape;
    const GroupCache& indexed = cache_.groups[kv];
    const float* summaries = cache_.groups[static_cast<std::size_t>(layer)].summary.data();
    const int block_tokens = spec.shape.block_tokens;
    const int candidates = position / block_tokens;
    const int per_block = indexed_shape.block_tokens / indexed_shape.ratio;
    splits_.clear();
    split_runs(
        Run{&keys_raw_[kv], indexed.raw_v.data(), candidates * block_tokens, position + 1 - candidates * block_tokens},
        Run{}, splits_);
    const int local_splits = static_cast<int>(splits_.size());
    std::vector<int> selected;
    std::vector<int> ends;
    for (int block = 0; block < candidates; ++block) {
        if (!index_selected(qi, summaries, candidates, spec.shape.top_k, block)) continue;
        selected.push_back(block);
        split_runs(Run{&keys_comp_[kv], indexed.comp_v.data(), block * per_block, per_block}, Run{}, splits_);
        ends.push_back(static_cast<int>(splits_.size()));
    }
    partials_.resize(splits_.size() * kHeads);
    partials_of(q, splits_.data(), static_cast<int>(splits_.size()), partials_.data());
    merge_range(0, local_splits, out);
    if (candidates == 0) return;
    const float max = index_max(qi, summaries, candidates);
    const float normaliser = index_normaliser(qi, summaries, candidates, max);
    int from = local_splits;
    for (std::size_t i = 0; i < selected.size(); ++i) {
        const float weight = exp_portable(index_score(qi, summaries, selected[i]) - max) / normaliser;
        float part[kModel];
        merge_range(from, ends[i], part);
        from = ends[i];
        for (int head = 0; head < kHeads; ++head)
            for (int d = 0; d < kHeadDim; ++d)
                out[head * kHeadDim + d] = out[head * kHeadDim + d] + weight * part[head * kHeadDim + d];
    }
}

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(bool fast) : fast_(fast) {}
    std::string_view name() const override { return fast_ ? "cpu" : "cpu-scalar"; }
    std::unique_ptr<Session> open(const TinyModel& model, int capacity) const override {
        return std::make_unique<CpuSession>(model, capacity, fast_);
    }

private:
    bool fast_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(true); }

std::unique_ptr<Backend> make_cpu_scalar_backend() { return std::make_unique<CpuBackend>(false); }

}  // namespace kvcheck::replay
