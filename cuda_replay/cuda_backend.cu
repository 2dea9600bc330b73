// CUDA backend: one kernel per step of a layer, each thread running the shared arithmetic of
// kernel_math.hpp in the CPU reference's order. Reductions use a fixed split size and no atomics;
// the decode step is a CUDA graph that is recaptured (and counted) when a buffer it bakes moves.
#include <algorithm>
#include <stdexcept>
#include <utility>

#include <cuda_runtime.h>

#include "cuda_replay/cuda_backend.hpp"
#include "cuda_replay/kernel_math.hpp"

namespace kvcheck::replay {

namespace {

constexpr int kMaxBatch = 256;     // tokens per launch; results do not depend on it (batch-invariant)
constexpr int kSplitThreads = 64;  // threads sharing the splits of one (token, head)

void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess)
        throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(status));
}

// An owning device array. Copies go through the session's stream and wait for it.
template <typename T>
class DeviceArray {
public:
    DeviceArray() = default;
    // Zero-filled. cudaMemset runs on the legacy stream, which a non-blocking stream does not
    // wait for, so the device is synchronised before the array is used.
    explicit DeviceArray(std::size_t count) : count_(count) {
        if (count_ == 0) return;
        check(cudaMalloc(reinterpret_cast<void**>(&data_), count_ * sizeof(T)), "cudaMalloc");
        check(cudaMemset(data_, 0, count_ * sizeof(T)), "cudaMemset");
        check(cudaDeviceSynchronize(), "cudaMemset sync");
    }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    DeviceArray(DeviceArray&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
    DeviceArray& operator=(DeviceArray&& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(count_, other.count_);
        return *this;
    }
    ~DeviceArray() {
        if (data_ != nullptr) cudaFree(data_);
    }

    T* get() const { return data_; }
    std::size_t size() const { return count_; }

    void upload(const T* host, std::size_t count, cudaStream_t stream) {
        if (count > count_) throw std::logic_error("upload larger than the device array");
        if (count == 0) return;
        check(cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream), "upload");
        check(cudaStreamSynchronize(stream), "upload sync");
    }
    void upload(const std::vector<T>& host, cudaStream_t stream) { upload(host.data(), host.size(), stream); }

    void download(T* host, std::size_t count, cudaStream_t stream) const {
        if (count == 0) return;
        check(cudaMemcpyAsync(host, data_, count * sizeof(T), cudaMemcpyDeviceToHost, stream), "download");
        check(cudaStreamSynchronize(stream), "download sync");
    }
    std::vector<T> download(cudaStream_t stream) const {
        std::vector<T> out(count_);
        download(out.data(), count_, stream);
        return out;
    }

private:
    T* data_ = nullptr;
    std::size_t count_ = 0;
};

using Floats = DeviceArray<float>;

// ---- kernels: blockIdx.x is the token of the batch, *first its absolute position ----

__global__ void embed_kernel(const int* tokens, const int* first, const float* embedding, float* h) {
    const int t = blockIdx.x;
    const int f = threadIdx.x;
    h[t * kModel + f] = embedding[tokens[t] * kModel + f] + position_feature(*first + t, f);
}

// q, k, v and the indexer query of one token; full, swa and chunked layers also store k, v rows.
__global__ void project_kernel(const float* h, const float* wq, const float* wk, const float* wv, const float* wiq,
                               float* q, float* k, float* v, float* qi, float* raw_k, float* raw_v, const int* first) {
    __shared__ float xn[kModel];
    const int t = blockIdx.x;
    const int j = threadIdx.x;
    if (j == 0) normalize(h + t * kModel, xn);
    __syncthreads();
    q[t * kModel + j] = dot(wq + j * kModel, xn, kModel);
    k[t * kModel + j] = dot(wk + j * kModel, xn, kModel);
    v[t * kModel + j] = dot(wv + j * kModel, xn, kModel);
    qi[t * kModel + j] = dot(wiq + j * kModel, xn, kModel);
    if (raw_k == nullptr) return;
    raw_k[(*first + t) * kModel + j] = k[t * kModel + j];
    raw_v[(*first + t) * kModel + j] = v[t * kModel + j];
}

__global__ void compress_kernel(LayerShape s, const float* raw_k, const float* raw_v, float* comp_k, float* comp_v,
                                const int* first) {
    const int end = *first + static_cast<int>(blockIdx.x) + 1;
    const int f = threadIdx.x;
    if (end % s.segment_tokens != 0) return;
    for (int e = (end - s.segment_tokens) / s.ratio; e < end / s.ratio; ++e) {
        comp_k[e * kModel + f] = mean_rows(raw_k + e * s.ratio * kModel, s.ratio, f);
        comp_v[e * kModel + f] = mean_rows(raw_v + e * s.ratio * kModel, s.ratio, f);
    }
}

__global__ void summary_kernel(int block_tokens, const float* indexed_raw_k, const float* ws, float* summary,
                               const int* first) {
    __shared__ float mean[kModel];
    const int end = *first + static_cast<int>(blockIdx.x) + 1;
    const int j = threadIdx.x;
    if (end % block_tokens != 0) return;  // uniform over the thread block
    const int block = end / block_tokens - 1;
    mean[j] = mean_rows(indexed_raw_k + block * block_tokens * kModel, block_tokens, j);
    __syncthreads();
    summary[block * kModel + j] = dot(ws + j * kModel, mean, kModel);
}

// The splits of one list are spread over the thread block; thread 0 merges them in split order.
__device__ void attend_list(const float* q_head, const EntryList& list, int head, Partial* scratch, float* out) {
    const int splits = split_count(entry_count(list));
    for (int s = threadIdx.x; s < splits; s += blockDim.x) attend_split(q_head, list, head, s, scratch[s]);
    __syncthreads();
    if (threadIdx.x == 0) merge_splits(scratch, splits, out);
    __syncthreads();
}

__global__ void attention_kernel(LayerShape s, KvView kv, const float* q, float* a, Partial* partials, int max_splits,
                                 const int* first) {
    const int t = blockIdx.x;
    const int head = blockIdx.y;
    const EntryList list = attention_list(s, kv, *first + t);
    attend_list(q + t * kModel + head * kHeadDim, list, head, partials + (t * kHeads + head) * max_splits,
                a + t * kModel + head * kHeadDim);
}

// Same operations as CpuSession::attend_indexer: local block, then selected blocks in ascending
// order, each weighted by its softmax share over all candidate blocks.
__global__ void indexer_kernel(LayerShape own, LayerShape indexed, KvView kv, const float* summaries, const float* q,
                               const float* qi, float* a, Partial* partials, int max_splits, const int* first) {
    __shared__ float acc[kHeadDim];
    __shared__ float part[kHeadDim];
    __shared__ float stats[3];  // max, normaliser, weight of the current block
    __shared__ int selected;
    const int t = blockIdx.x;
    const int head = blockIdx.y;
    const int position = *first + t;
    const float* q_head = q + t * kModel + head * kHeadDim;
    const float* qi_token = qi + t * kModel;
    Partial* scratch = partials + (t * kHeads + head) * max_splits;
    const int candidates = position / own.block_tokens;
    attend_list(q_head, raw_range(kv, candidates * own.block_tokens, position + 1), head, scratch, acc);
    if (candidates > 0 && threadIdx.x == 0) {
        stats[0] = index_max(qi_token, summaries, candidates);
        stats[1] = index_normaliser(qi_token, summaries, candidates, stats[0]);
    }
    for (int block = 0; block < candidates; ++block) {
        if (threadIdx.x == 0) {
            selected = index_selected(qi_token, summaries, candidates, own.top_k, block) ? 1 : 0;
            stats[2] = exp_portable(index_score(qi_token, summaries, block) - stats[0]) / stats[1];
        }
        __syncthreads();
        if (selected != 0) {
            attend_list(q_head, block_list(indexed, kv, block), head, scratch, part);
            if (threadIdx.x == 0)
                for (int d = 0; d < kHeadDim; ++d) acc[d] = acc[d] + stats[2] * part[d];
        }
        __syncthreads();
    }
    if (threadIdx.x < kHeadDim) a[t * kModel + head * kHeadDim + threadIdx.x] = acc[threadIdx.x];
}

// One thread per (head, state column); tokens run in order, as the recurrence requires.
__global__ void linear_kernel(float* state, const float* q, const float* k, const float* v, float* a, int count) {
    const int head = blockIdx.x;
    const int column = threadIdx.x;
    for (int t = 0; t < count; ++t) {
        const int at = t * kModel + head * kHeadDim;
        a[at + column] = linear_column_step(state + head * kHeadDim * kHeadDim, q + at, k + at, v + at, column);
    }
}

__global__ void output_kernel(float* h, const float* wo, const float* a, float* trace, int layer, int layers) {
    const int t = blockIdx.x;
    const int j = threadIdx.x;
    const float out = h[t * kModel + j] + dot(wo + j * kModel, a + t * kModel, kModel);
    h[t * kModel + j] = out;
    trace[(t * layers + layer) * kModel + j] = out;
}

__global__ void logits_kernel(const float* h, int last, const float* unembedding, float* logits) {
    __shared__ float xn[kModel];
    if (threadIdx.x == 0) normalize(h + last * kModel, xn);
    __syncthreads();
    logits[threadIdx.x] = dot(unembedding + threadIdx.x * kModel, xn, kModel);
}

struct LayerBuffers {
    Floats wq, wk, wv, wo, wiq, ws;
    Floats raw_k, raw_v, comp_k, comp_v, summary, state;

    std::vector<Floats*> cache() { return {&raw_k, &raw_v, &comp_k, &comp_v, &summary, &state}; }
    std::vector<const Floats*> cache() const { return {&raw_k, &raw_v, &comp_k, &comp_v, &summary, &state}; }
};

std::vector<std::vector<float>*> host_cache(GroupCache& g) {
    return {&g.raw_k, &g.raw_v, &g.comp_k, &g.comp_v, &g.summary, &g.state};
}

class CudaSession final : public Session {
public:
    CudaSession(const TinyModel& model, int capacity, bool graph_guard);
    ~CudaSession() override;
    CudaSession(const CudaSession&) = delete;
    CudaSession& operator=(const CudaSession&) = delete;

    int length() const override { return length_; }
    void load(const CacheState& cache) override;
    CacheState save() const override;
    std::vector<float> prefill(std::span<const int> tokens, std::vector<float>& hidden) override;
    std::vector<float> decode(int token, std::vector<float>& hidden) override;
    void migrate(int layer) override;
    int recaptures() const override { return recaptures_; }

private:
    void enqueue_step(int count);
    void capture_decode();
    std::vector<const void*> cache_addresses();
    std::vector<float> finish_step(int count, std::vector<float>& hidden);

    TinyModel model_;
    int capacity_;
    int length_ = 0;
    int max_splits_;
    cudaStream_t stream_ = nullptr;
    std::vector<LayerBuffers> layers_;
    Floats embedding_, unembedding_, h_, q_, k_, v_, qi_, a_, trace_, logits_;
    DeviceArray<int> tokens_, first_;
    DeviceArray<Partial> partials_;
    cudaGraphExec_t graph_ = nullptr;
    std::vector<const void*> captured_;  // cache addresses baked into graph_
    int recaptures_ = 0;
    bool graph_guard_;
    // Without the guard, buffers a migration replaced stay allocated until the session ends: the
    // graph keeps reading and writing them (stale bytes, not freed memory).
    std::vector<Floats> retired_;
};

CudaSession::CudaSession(const TinyModel& model, int capacity, bool graph_guard)
    : model_(model), capacity_(capacity), max_splits_(split_count(capacity > 0 ? capacity : 1)),
      graph_guard_(graph_guard) {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
    const CacheState shape = empty_cache(model.layers(), capacity);
    for (int l = 0; l < model.layer_count(); ++l) {
        const LayerWeights& w = model.weights(l);
        LayerBuffers b;
        const std::pair<Floats*, const std::vector<float>*> weights[] = {
            {&b.wq, &w.wq}, {&b.wk, &w.wk}, {&b.wv, &w.wv}, {&b.wo, &w.wo}, {&b.wiq, &w.wiq}, {&b.ws, &w.ws}};
        for (const auto& [device, host] : weights) {
            *device = Floats(host->size());
            device->upload(*host, stream_);
        }
        GroupCache g = shape.groups[static_cast<std::size_t>(l)];
        const std::vector<Floats*> device = b.cache();
        const std::vector<std::vector<float>*> host = host_cache(g);
        for (std::size_t i = 0; i < device.size(); ++i) *device[i] = Floats(host[i]->size());
        layers_.push_back(std::move(b));
    }
    embedding_ = Floats(model.embedding().size());
    embedding_.upload(model.embedding(), stream_);
    unembedding_ = Floats(model.unembedding().size());
    unembedding_.upload(model.unembedding(), stream_);
    for (Floats* scratch : {&h_, &q_, &k_, &v_, &qi_, &a_})
        *scratch = Floats(static_cast<std::size_t>(kMaxBatch) * kModel);
    trace_ = Floats(static_cast<std::size_t>(kMaxBatch) * static_cast<std::size_t>(model.layer_count()) * kModel);
    logits_ = Floats(kVocab);
    tokens_ = DeviceArray<int>(kMaxBatch);
    first_ = DeviceArray<int>(1);
    partials_ =
        DeviceArray<Partial>(static_cast<std::size_t>(kMaxBatch) * kHeads * static_cast<std::size_t>(max_splits_));
    // Engines capture decode graphs at start-up over a static cache pool; so does the replay.
    capture_decode();
}

CudaSession::~CudaSession() {
    if (graph_ != nullptr) cudaGraphExecDestroy(graph_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaSession::enqueue_step(int count) {
    const int layers = model_.layer_count();
    embed_kernel<<<count, kModel, 0, stream_>>>(tokens_.get(), first_.get(), embedding_.get(), h_.get());
    for (int l = 0; l < layers; ++l) {
        const LayerSpec& spec = model_.layers()[static_cast<std::size_t>(l)];
        LayerBuffers& b = layers_[static_cast<std::size_t>(l)];
        const bool stores_rows = spec.shape.kind == LayerKind::full || spec.shape.kind == LayerKind::swa ||
                                 spec.shape.kind == LayerKind::chunked;
        project_kernel<<<count, kModel, 0, stream_>>>(
            h_.get(), b.wq.get(), b.wk.get(), b.wv.get(), b.wiq.get(), q_.get(), k_.get(), v_.get(), qi_.get(),
            stores_rows ? b.raw_k.get() : nullptr, stores_rows ? b.raw_v.get() : nullptr, first_.get());
        const KvView own{b.raw_k.get(), b.raw_v.get(), b.comp_k.get(), b.comp_v.get()};
        const dim3 per_head(static_cast<unsigned>(count), kHeads);
        switch (spec.shape.kind) {
            case LayerKind::full:
                compress_kernel<<<count, kModel, 0, stream_>>>(spec.shape, b.raw_k.get(), b.raw_v.get(), b.comp_k.get(),
                                                               b.comp_v.get(), first_.get());
                [[fallthrough]];
            case LayerKind::swa:
            case LayerKind::chunked:
                attention_kernel<<<per_head, kSplitThreads, 0, stream_>>>(spec.shape, own, q_.get(), a_.get(),
                                                                          partials_.get(), max_splits_, first_.get());
                break;
            case LayerKind::indexer: {
                LayerBuffers& kv = layers_[static_cast<std::size_t>(spec.indexed_layer)];
                const LayerShape& indexed = model_.layers()[static_cast<std::size_t>(spec.indexed_layer)].shape;
                summary_kernel<<<count, kModel, 0, stream_>>>(spec.shape.block_tokens, kv.raw_k.get(), b.ws.get(),
                                                              b.summary.get(), first_.get());
                indexer_kernel<<<per_head, kSplitThreads, 0, stream_>>>(
                    spec.shape, indexed, KvView{kv.raw_k.get(), kv.raw_v.get(), kv.comp_k.get(), kv.comp_v.get()},
                    b.summary.get(), q_.get(), qi_.get(), a_.get(), partials_.get(), max_splits_, first_.get());
                break;
            }
            case LayerKind::linear:
                linear_kernel<<<kHeads, kHeadDim, 0, stream_>>>(b.state.get(), q_.get(), k_.get(), v_.get(), a_.get(),
                                                                count);
                break;
        }
        output_kernel<<<count, kModel, 0, stream_>>>(h_.get(), b.wo.get(), a_.get(), trace_.get(), l, layers);
    }
    logits_kernel<<<1, kVocab, 0, stream_>>>(h_.get(), count - 1, unembedding_.get(), logits_.get());
    check(cudaGetLastError(), "kernel launch");
}

std::vector<const void*> CudaSession::cache_addresses() {
    std::vector<const void*> out;
    for (LayerBuffers& b : layers_)
        for (Floats* buffer : b.cache()) out.push_back(buffer->get());
    return out;
}

void CudaSession::capture_decode() {
    if (graph_ != nullptr) check(cudaGraphExecDestroy(graph_), "graph destroy");
    graph_ = nullptr;
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "begin capture");
    enqueue_step(1);
    check(cudaStreamEndCapture(stream_, &graph), "end capture");
    check(cudaGraphInstantiate(&graph_, graph, 0), "graph instantiate");
    check(cudaGraphDestroy(graph), "graph destroy");
    captured_ = cache_addresses();
}

std::vector<float> CudaSession::finish_step(int count, std::vector<float>& hidden) {
    const std::size_t rows = static_cast<std::size_t>(count) * static_cast<std::size_t>(model_.layer_count()) * kModel;
    const std::size_t base = hidden.size();
    hidden.resize(base + rows);
    trace_.download(hidden.data() + base, rows, stream_);
    length_ += count;
    std::vector<float> logits(kVocab);
    logits_.download(logits.data(), logits.size(), stream_);
    return logits;
}

std::vector<float> CudaSession::prefill(std::span<const int> tokens, std::vector<float>& hidden) {
    if (tokens.empty() || length_ + static_cast<int>(tokens.size()) > capacity_)
        throw std::logic_error("prefill outside the session's capacity");
    std::vector<float> logits;
    for (std::size_t done = 0; done < tokens.size();) {
        const int count = static_cast<int>(std::min<std::size_t>(kMaxBatch, tokens.size() - done));
        tokens_.upload(tokens.data() + done, static_cast<std::size_t>(count), stream_);
        first_.upload(&length_, 1, stream_);
        enqueue_step(count);
        logits = finish_step(count, hidden);
        done += static_cast<std::size_t>(count);
    }
    return logits;
}

std::vector<float> CudaSession::decode(int token, std::vector<float>& hidden) {
    if (length_ + 1 > capacity_) throw std::logic_error("decode beyond the session's capacity");
    // The graph guard: a graph whose baked cache addresses moved is recaptured before it runs.
    if (graph_guard_ && cache_addresses() != captured_) {
        capture_decode();
        ++recaptures_;
    }
    tokens_.upload(&token, 1, stream_);
    first_.upload(&length_, 1, stream_);
    check(cudaGraphLaunch(graph_, stream_), "graph launch");
    return finish_step(1, hidden);
}

void CudaSession::load(const CacheState& cache) {
    if (cache.capacity != capacity_ || cache.groups.size() != layers_.size())
        throw std::logic_error("load() of a cache of another shape");
    for (std::size_t l = 0; l < layers_.size(); ++l) {
        GroupCache g = cache.groups[l];
        const std::vector<Floats*> device = layers_[l].cache();
        const std::vector<std::vector<float>*> host = host_cache(g);
        for (std::size_t i = 0; i < device.size(); ++i) {
            if (host[i]->size() != device[i]->size()) throw std::logic_error("load() of a cache of another shape");
            device[i]->upload(*host[i], stream_);
        }
    }
    length_ = cache.length;
}

CacheState CudaSession::save() const {
    CacheState out = empty_cache(model_.layers(), capacity_);
    out.length = length_;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
        const std::vector<const Floats*> device = layers_[l].cache();
        const std::vector<std::vector<float>*> host = host_cache(out.groups[l]);
        for (std::size_t i = 0; i < device.size(); ++i) *host[i] = device[i]->download(stream_);
    }
    return out;
}

// A reload into another slot: through host memory into a buffer allocated while the old one is
// still held, so the new address always differs from the one the decode graph baked in.
void CudaSession::migrate(int layer) {
    if (layer < 0 || layer >= model_.layer_count()) throw std::logic_error("migrate() of a layer that does not exist");
    for (Floats* buffer : layers_[static_cast<std::size_t>(layer)].cache()) {
        const std::vector<float> host = buffer->download(stream_);
        Floats moved(host.size());
        moved.upload(host, stream_);
        if (!graph_guard_) retired_.push_back(std::move(*buffer));
        *buffer = std::move(moved);
    }
}

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(bool graph_guard) : graph_guard_(graph_guard) {}
    std::string_view name() const override { return "cuda"; }
    std::unique_ptr<Session> open(const TinyModel& model, int capacity) const override {
        return std::make_unique<CudaSession>(model, capacity, graph_guard_);
    }

private:
    bool graph_guard_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::string& why, BackendOptions options) {
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess || devices == 0) {
        why = std::string("no CUDA device: ") + (status != cudaSuccess ? cudaGetErrorString(status) : "none found");
        return nullptr;
    }
    return std::make_unique<CudaBackend>(options.graph_guard);
}

}  // namespace kvcheck::replay
