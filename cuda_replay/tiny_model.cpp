// Weight generation for the tiny model: every weight is a small integer times a power of two,
// drawn from kvcheck::Rng with a seed derived from (version, layer, matrix), so weights are exact
// in binary and identical on every machine.
#include "cuda_replay/tiny_model.hpp"

#include "model/core.hpp"

namespace kvcheck::replay {

namespace {

enum Matrix : std::uint64_t {
    matrix_q = 1,
    matrix_k,
    matrix_v,
    matrix_o,
    matrix_iq,
    matrix_s,
    matrix_embed,
    matrix_unembed
};

// `count` values (i - half) * step with i uniform in [0, 2 * half].
std::vector<float> draw(std::uint64_t seed, std::size_t count, std::uint32_t half, float step) {
    Rng rng(seed);
    std::vector<float> out(count);
    for (float& x : out) {
        const auto i = static_cast<std::int32_t>(rng.below(2 * std::uint64_t{half} + 1));
        x = static_cast<float>(i - static_cast<std::int32_t>(half)) * step;
    }
    KV_ASSERT(out.size() == count, "weight draw produced the wrong count");
    return out;
}

std::uint64_t matrix_seed(std::uint64_t version, int layer, Matrix m) {
    return hash_combine(hash_combine(version, static_cast<std::uint64_t>(layer) + 1), m);
}

LayerWeights layer_weights(std::uint64_t version, int layer) {
    constexpr std::size_t kEntries = kModel * kModel;  // one square matrix
    LayerWeights w;
    w.wq = draw(matrix_seed(version, layer, matrix_q), kEntries, 64, 1.0f / 256.0f);
    w.wk = draw(matrix_seed(version, layer, matrix_k), kEntries, 64, 1.0f / 256.0f);
    w.wv = draw(matrix_seed(version, layer, matrix_v), kEntries, 64, 1.0f / 256.0f);
    w.wo = draw(matrix_seed(version, layer, matrix_o), kEntries, 64, 1.0f / 512.0f);
    w.wiq = draw(matrix_seed(version, layer, matrix_iq), kEntries, 64, 1.0f / 256.0f);
    w.ws = draw(matrix_seed(version, layer, matrix_s), kEntries, 64, 1.0f / 128.0f);
    return w;
}

LayerKind layer_kind(model::GroupKind kind) {
    switch (kind) {
        case model::GroupKind::full: return LayerKind::full;
        case model::GroupKind::swa: return LayerKind::swa;
        case model::GroupKind::chunked: return LayerKind::chunked;
        case model::GroupKind::indexer: return LayerKind::indexer;
        case model::GroupKind::linear: return LayerKind::linear;
    }
    KV_UNREACHABLE("unknown group kind");
}

}  // namespace

std::vector<LayerSpec> layer_specs(const std::vector<model::CacheGroup>& groups) {
    std::vector<LayerSpec> out;
    for (const model::CacheGroup& g : groups) {
        LayerSpec spec;
        spec.shape.kind = layer_kind(g.kind);
        spec.shape.block_tokens = static_cast<std::int32_t>(g.block_tokens);
        spec.shape.segment_tokens = static_cast<std::int32_t>(g.segment_tokens);
        spec.shape.window_tokens = static_cast<std::int32_t>(g.window_tokens);
        spec.shape.ratio = static_cast<std::int32_t>(g.compress_ratio);
        spec.shape.top_k = static_cast<std::int32_t>(g.indexer_top_k);
        spec.indexed_layer = g.indexed_group;
        KV_ASSERT(spec.shape.block_tokens > 0 && spec.shape.ratio > 0, "groups must be validated before use");
        out.push_back(spec);
    }
    KV_ASSERT_EQ(out.size(), groups.size(), "one layer per group");
    return out;
}

TinyModel::TinyModel(std::vector<LayerSpec> layers, std::uint64_t weights_version)
    : layers_(std::move(layers)), layer_versions_(layers_.size(), weights_version), base_version_(weights_version) {
    for (int l = 0; l < layer_count(); ++l) weights_.push_back(layer_weights(weights_version, l));
    embedding_ = draw(matrix_seed(weights_version, 0, matrix_embed), kVocab * kModel, 128, 1.0f / 128.0f);
    unembedding_ = draw(matrix_seed(weights_version, 0, matrix_unembed), kVocab * kModel, 64, 1.0f / 256.0f);
    refresh_fingerprint();
    KV_ASSERT_EQ(weights_.size(), layers_.size(), "weights for every layer");
}

TinyModel TinyModel::with_layer_version(int layer, std::uint64_t version) const {
    KV_ASSERT(layer >= 0 && layer < layer_count(), "layer out of range");
    TinyModel out = *this;
    const auto l = static_cast<std::size_t>(layer);
    out.layer_versions_[l] = version;
    out.weights_[l] = layer_weights(version, layer);
    out.refresh_fingerprint();
    return out;
}

void TinyModel::refresh_fingerprint() {
    std::uint64_t h = hash_combine(0x7417u, base_version_);
    for (std::uint64_t v : layer_versions_) h = hash_combine(h, v);
    for (const LayerSpec& s : layers_) {
        h = hash_combine(h, static_cast<std::uint64_t>(s.shape.kind));
        for (std::int32_t x : {s.shape.block_tokens, s.shape.segment_tokens, s.shape.window_tokens, s.shape.ratio,
                               s.shape.top_k, s.indexed_layer})
            h = hash_combine(h, static_cast<std::uint64_t>(static_cast<std::int64_t>(x)));
    }
    fingerprint_ = h;
}

}  // namespace kvcheck::replay
