// CPU reference backend: fp32 throughout, the fixed split-size reductions of kernel_math.hpp, and
// no multiply-add contraction (-ffp-contract=off). A chunk is processed layer by layer, in the
// same order of operations as the CUDA kernels.
#include "cuda_replay/backend.hpp"

#include <algorithm>

#include "model/core.hpp"

namespace kvcheck::replay {

namespace {

KvView view_of(const GroupCache& g) {
    return {g.raw_k.empty() ? nullptr : g.raw_k.data(), g.raw_v.empty() ? nullptr : g.raw_v.data(),
            g.comp_k.empty() ? nullptr : g.comp_k.data(), g.comp_v.empty() ? nullptr : g.comp_v.data()};
}

bool same_shape(const CacheState& a, const CacheState& b) {
    if (a.capacity != b.capacity || a.groups.size() != b.groups.size()) return false;
    for (std::size_t i = 0; i < a.groups.size(); ++i) {
        const GroupCache& x = a.groups[i];
        const GroupCache& y = b.groups[i];
        if (x.raw_k.size() != y.raw_k.size() || x.raw_v.size() != y.raw_v.size() || x.comp_k.size() != y.comp_k.size() ||
            x.comp_v.size() != y.comp_v.size() || x.summary.size() != y.summary.size() || x.state.size() != y.state.size())
            return false;
    }
    return true;
}

float* row(std::vector<float>& v, int index) { return v.data() + static_cast<std::ptrdiff_t>(index) * kModel; }
const float* row(const std::vector<float>& v, int index) { return v.data() + static_cast<std::ptrdiff_t>(index) * kModel; }

class CpuSession final : public Session {
public:
    CpuSession(const TinyModel& model, int capacity) : model_(model), cache_(empty_cache(model.layers(), capacity)) {}

    int length() const override { return cache_.length; }

    void load(const CacheState& cache) override {
        KV_ASSERT(same_shape(cache, cache_), "load() needs a cache of the session's shape");
        KV_ASSERT(cache.length >= 0 && cache.length <= cache.capacity, "cache length out of range");
        cache_ = cache;
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
    void run_layer(int layer, int first, int count, std::vector<float>& h);
    void attend_list(const float* q_head, const EntryList& list, int head, float* out);
    void attend_indexer(int layer, int position, const float* q, const float* qi, float* out);

    TinyModel model_;
    CacheState cache_;
    std::vector<Partial> partials_;
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
    for (int v = 0; v < kVocab; ++v) logits[static_cast<std::size_t>(v)] = dot(row(model_.unembedding(), v), xn, kModel);
    return logits;
}

void CpuSession::run_layer(int layer, int first, int count, std::vector<float>& h) {
    const LayerSpec& spec = model_.layers()[static_cast<std::size_t>(layer)];
    const LayerShape& s = spec.shape;
    const LayerWeights& w = model_.weights(layer);
    GroupCache& g = cache_.groups[static_cast<std::size_t>(layer)];
    const std::size_t n = static_cast<std::size_t>(count) * kModel;
    std::vector<float> q(n), k(n), v(n), qi(n), a(n);
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
    switch (s.kind) {
        case LayerKind::full:
        case LayerKind::swa:
        case LayerKind::chunked:
            for (int t = 0; t < count; ++t) {
                std::copy_n(row(k, t), kModel, row(g.raw_k, first + t));
                std::copy_n(row(v, t), kModel, row(g.raw_v, first + t));
            }
            if (s.kind == LayerKind::full) {
                // A segment is compressed when its last token is written: each entry is the mean
                // of `ratio` consecutive raw rows.
                for (int t = 0; t < count; ++t) {
                    const int end = first + t + 1;
                    if (end % s.segment_tokens != 0) continue;
                    for (int e = (end - s.segment_tokens) / s.ratio; e < end / s.ratio; ++e)
                        for (int f = 0; f < kModel; ++f) {
                            row(g.comp_k, e)[f] = mean_rows(row(g.raw_k, e * s.ratio), s.ratio, f);
                            row(g.comp_v, e)[f] = mean_rows(row(g.raw_v, e * s.ratio), s.ratio, f);
                        }
                }
            }
            for (int t = 0; t < count; ++t) {
                const EntryList list = attention_list(s, view_of(g), first + t);
                for (int head = 0; head < kHeads; ++head)
                    attend_list(row(q, t) + head * kHeadDim, list, head, row(a, t) + head * kHeadDim);
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
                for (int f = 0; f < kModel; ++f) mean[f] = mean_rows(row(indexed.raw_k, block * s.block_tokens), s.block_tokens, f);
                for (int j = 0; j < kModel; ++j) row(g.summary, block)[j] = dot(row(w.ws, j), mean, kModel);
            }
            for (int t = 0; t < count; ++t) attend_indexer(layer, first + t, row(q, t), row(qi, t), row(a, t));
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
    for (int t = 0; t < count; ++t)
        for (int j = 0; j < kModel; ++j) row(h, t)[j] = row(h, t)[j] + dot(row(w.wo, j), row(a, t), kModel);
}

void CpuSession::attend_list(const float* q_head, const EntryList& list, int head, float* out) {
    const int splits = split_count(entry_count(list));
    KV_ASSERT(splits > 0, "a query always attends at least one entry");
    partials_.resize(static_cast<std::size_t>(splits));
    for (int split = 0; split < splits; ++split) attend_split(q_head, list, head, split, partials_[static_cast<std::size_t>(split)]);
    merge_splits(partials_.data(), splits, out);
}

// The sparse layer: the query always attends its own block of the indexed layer's raw rows, plus
// the top-k earlier blocks by index score; each selected block's output is weighted by the softmax
// of its score over ALL candidate blocks, so every index entry enters the output.
void CpuSession::attend_indexer(int layer, int position, const float* q, const float* qi, float* out) {
    const LayerSpec& spec = model_.layers()[static_cast<std::size_t>(layer)];
    const LayerShape& indexed_shape = model_.layers()[static_cast<std::size_t>(spec.indexed_layer)].shape;
    const KvView indexed = view_of(cache_.groups[static_cast<std::size_t>(spec.indexed_layer)]);
    const float* summaries = cache_.groups[static_cast<std::size_t>(layer)].summary.data();
    const int block_tokens = spec.shape.block_tokens;
    const int candidates = position / block_tokens;
    const EntryList local = raw_range(indexed, candidates * block_tokens, position + 1);
    for (int head = 0; head < kHeads; ++head) attend_list(q + head * kHeadDim, local, head, out + head * kHeadDim);
    if (candidates == 0) return;
    const float max = index_max(qi, summaries, candidates);
    const float normaliser = index_normaliser(qi, summaries, candidates, max);
    for (int block = 0; block < candidates; ++block) {
        if (!index_selected(qi, summaries, candidates, spec.shape.top_k, block)) continue;
        const float weight = exp_portable(index_score(qi, summaries, block) - max) / normaliser;
        const EntryList list = block_list(indexed_shape, indexed, block);
        for (int head = 0; head < kHeads; ++head) {
            float part[kHeadDim];
            attend_list(q + head * kHeadDim, list, head, part);
            for (int d = 0; d < kHeadDim; ++d) out[head * kHeadDim + d] = out[head * kHeadDim + d] + weight * part[d];
        }
    }
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
    class CpuBackend final : public Backend {
    public:
        std::string_view name() const override { return "cpu"; }
        std::unique_ptr<Session> open(const TinyModel& model, int capacity) const override {
            return std::make_unique<CpuSession>(model, capacity);
        }
    };
    return std::make_unique<CpuBackend>();
}

}  // namespace kvcheck::replay
