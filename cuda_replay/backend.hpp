// One interface over the two backends that run the tiny model: the fp32 CPU reference and the
// CUDA kernels. A Session is one sequence's caches on a backend; it prefills chunks, decodes one
// token at a time, and can load or save its caches as host bytes.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_replay/tiny_model.hpp"

namespace kvcheck::replay {

// One layer's cache in host memory. Positions are absolute; a row is kModel floats.
struct GroupCache {
    std::vector<float> raw_k, raw_v;    // full, swa, chunked: [capacity tokens][kModel]
    std::vector<float> comp_k, comp_v;  // full: [capacity / ratio + 1 entries][kModel]
    std::vector<float> summary;         // indexer: [capacity / block + 1 blocks][kModel]
    std::vector<float> state;           // linear: [kHeads][kHeadDim][kHeadDim] after `length` tokens
};

struct CacheState {
    int length = 0;    // tokens the cache holds
    int capacity = 0;  // tokens it can hold
    std::vector<GroupCache> groups;
};

// All-zero caches for `capacity` tokens, holding nothing.
CacheState empty_cache(const std::vector<LayerSpec>& layers, int capacity);

class Session {
public:
    virtual ~Session() = default;
    virtual int length() const = 0;
    // Replaces every cache (and the length) with host bytes of the same shape.
    virtual void load(const CacheState& cache) = 0;
    virtual CacheState save() const = 0;
    // Runs `tokens` at positions length() .. length() + size - 1 as one prefill chunk. Appends each
    // position's output of every layer to `hidden` ([position][layer][kModel]) and returns the
    // logits of the last position.
    virtual std::vector<float> prefill(std::span<const int> tokens, std::vector<float>& hidden) = 0;
    // One decode step (on CUDA: a captured graph) with the same outputs as a one-token prefill.
    virtual std::vector<float> decode(int token, std::vector<float>& hidden) = 0;
    // Moves one layer's cache buffers to a new address, as a reload into another slot does.
    virtual void migrate(int layer) = 0;
    // Decode graphs captured again because a buffer they reference moved (always 0 on the CPU).
    virtual int recaptures() const = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string_view name() const = 0;
    virtual std::unique_ptr<Session> open(const TinyModel& model, int capacity) const = 0;
};

// The CPU reference (fast path; see cpu_backend.cpp).
std::unique_ptr<Backend> make_cpu_backend();
// The same arithmetic calling the kernel_math.hpp functions one result at a time, exactly as the
// CUDA kernels do: slow; tests check that make_cpu_backend() agrees with it bit for bit.
std::unique_ptr<Backend> make_cpu_scalar_backend();

struct BackendOptions {
    // CUDA: before each decode launch, recapture the decode graph when a cache buffer it baked has
    // moved (RL4). Off, the graph keeps running on the addresses it baked, as an engine under the
    // `no-graph-guard` mutant does; the CPU backend has no graphs and refuses it.
    bool graph_guard = true;
};

// "cpu" or "cuda". Returns null and sets `why` when the backend is unknown, was not built
// ("built without CUDA"), has no device, or cannot honour `options`.
std::unique_ptr<Backend> make_backend(std::string_view name, std::string& why, BackendOptions options = {});

// True when this build contains the CUDA backend.
bool built_with_cuda();

}  // namespace kvcheck::replay
