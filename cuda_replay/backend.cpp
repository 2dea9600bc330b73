// Backend selection and cache allocation shared by both backends. The CUDA factory exists only
// when CMake found nvcc (KVCHECK_HAVE_CUDA); otherwise no CUDA symbol is referenced.
#include "cuda_replay/backend.hpp"

#include "model/core.hpp"

#if defined(KVCHECK_HAVE_CUDA)
#include "cuda_replay/cuda_backend.hpp"
#endif

namespace kvcheck::replay {

CacheState empty_cache(const std::vector<LayerSpec>& layers, int capacity) {
    KV_ASSERT(capacity >= 0, "negative capacity");
    CacheState out;
    out.capacity = capacity;
    const auto rows = [](int count) { return static_cast<std::size_t>(count) * kModel; };
    for (const LayerSpec& spec : layers) {
        GroupCache g;
        const LayerShape& s = spec.shape;
        switch (s.kind) {
            case LayerKind::full:
                g.comp_k.assign(rows(capacity / s.ratio + 1), 0.0f);
                g.comp_v.assign(rows(capacity / s.ratio + 1), 0.0f);
                [[fallthrough]];
            case LayerKind::swa:
            case LayerKind::chunked:
                g.raw_k.assign(rows(capacity), 0.0f);
                g.raw_v.assign(rows(capacity), 0.0f);
                break;
            case LayerKind::indexer: g.summary.assign(rows(capacity / s.block_tokens + 1), 0.0f); break;
            case LayerKind::linear: g.state.assign(static_cast<std::size_t>(kHeads) * kHeadDim * kHeadDim, 0.0f); break;
        }
        out.groups.push_back(std::move(g));
    }
    KV_ASSERT_EQ(out.groups.size(), layers.size(), "one cache per layer");
    return out;
}

bool built_with_cuda() {
#if defined(KVCHECK_HAVE_CUDA)
    return true;
#else
    return false;
#endif
}

std::unique_ptr<Backend> make_backend(std::string_view name, std::string& why, BackendOptions options) {
    if (name == "cpu") {
        if (options.graph_guard) return make_cpu_backend();
        why = "the CPU backend captures no decode graphs, so it has no graph guard to drop (expected --backend cuda)";
        return nullptr;
    }
    if (name == "cuda") {
#if defined(KVCHECK_HAVE_CUDA)
        return make_cuda_backend(why, options);
#else
        why = "built without CUDA (nvcc was not found at configure time, or KVCHECK_CUDA=OFF)";
        return nullptr;
#endif
    }
    why = "unknown backend '" + std::string(name) + "' (expected cpu or cuda)";
    return nullptr;
}

}  // namespace kvcheck::replay
