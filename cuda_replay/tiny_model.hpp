// The tiny hybrid-attention model: one layer per cache group of the schedule, stacked in group
// order, with fixed integer-derived weights seeded by the weights version (another version gives
// other weights). Weights live on the host; each backend copies them to where it computes.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda_replay/kernel_math.hpp"
#include "model/preset.hpp"

namespace kvcheck::replay {

struct LayerSpec {
    LayerShape shape;
    int indexed_layer = -1;  // indexer: the full layer whose KV blocks it routes over
};

// One layer per group; the groups must already be validated (see schedule.hpp).
std::vector<LayerSpec> layer_specs(const std::vector<model::CacheGroup>& groups);

// Matrices are [kModel][kModel], row j producing output feature j.
struct LayerWeights {
    std::vector<float> wq, wk, wv, wo;
    std::vector<float> wiq;  // indexer: query used to score blocks
    std::vector<float> ws;   // indexer: projection of a block's mean key into its summary
};

class TinyModel {
public:
    TinyModel(std::vector<LayerSpec> layers, std::uint64_t weights_version);

    // The same model with one layer's weights taken from another version: the model that built a
    // stale index (indexer layer at one version, the KV it summarised at another).
    TinyModel with_layer_version(int layer, std::uint64_t version) const;

    const std::vector<LayerSpec>& layers() const { return layers_; }
    int layer_count() const { return static_cast<int>(layers_.size()); }
    const std::vector<float>& embedding() const { return embedding_; }      // [kVocab][kModel]
    const std::vector<float>& unembedding() const { return unembedding_; }  // [kVocab][kModel]
    const LayerWeights& weights(int layer) const { return weights_[static_cast<std::size_t>(layer)]; }
    // Identifies the weights: equal fingerprints compute equal bytes.
    std::uint64_t fingerprint() const { return fingerprint_; }

private:
    void refresh_fingerprint();

    std::vector<LayerSpec> layers_;
    std::vector<std::uint64_t> layer_versions_;
    std::vector<LayerWeights> weights_;
    std::vector<float> embedding_;
    std::vector<float> unembedding_;
    std::uint64_t base_version_ = 0;
    std::uint64_t fingerprint_ = 0;
};

}  // namespace kvcheck::replay
