// State-table operations: a segment's create/publish/unpublish/free churn at a steady table size,
// an LRU touch, and the prefix index (FlatIndex) put, find and erase at several sizes.
#include <deque>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "model/alloc.hpp"
#include "model/core.hpp"
#include "model/flat_index.hpp"

namespace {

namespace model = kvcheck::model;
using kvcheck::Rng;

// A DeepSeek-V4 world with a budget no test here reaches, so admission never evicts.
model::World empty_world() {
    model::Limits limits;
    limits.gpu_budget_bytes = 1ULL << 50;
    return model::World(std::make_shared<model::ModelConfig>(*model::find_preset("deepseek-v4")),
                        model::find_policy("validated")->defenses, limits, model::Rollout::cross_request);
}

// A written, published, evictable compressed segment of group 0, as complete_writes leaves it.
std::uint32_t add_ready_segment(model::World& w, std::uint64_t key) {
    const std::uint32_t id = model::create_segment(w, 0, model::Form::compressed_kv, 0, 256, key, 0, nullptr);
    KV_ASSERT(id != model::kNone, "admission refused a segment under an unbounded budget");
    w.segments[id].stage = model::Stage::ready;
    model::publish(w, id);
    model::touch(w, id);
    return id;
}

// One block's whole life per iteration: the oldest segment goes, a new one comes, the table size stays.
void BM_segment_churn(benchmark::State& state) {
    model::World w = empty_world();
    Rng rng(1);
    std::deque<std::uint32_t> live;
    for (std::int64_t i = 0; i < state.range(0); ++i) live.push_back(add_ready_segment(w, rng.next()));
    for (auto _ : state) {
        model::free_segment(w, live.front());
        live.pop_front();
        live.push_back(add_ready_segment(w, rng.next()));
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["live_segments"] = w.live_segments;
}
BENCHMARK(BM_segment_churn)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

// Moves a random segment to the recent end of its eviction list, as a lookup hit does.
void BM_lru_touch(benchmark::State& state) {
    model::World w = empty_world();
    Rng rng(2);
    std::vector<std::uint32_t> ids;
    for (std::int64_t i = 0; i < state.range(0); ++i) ids.push_back(add_ready_segment(w, rng.next()));
    for (auto _ : state) model::touch(w, ids[rng.below(ids.size())]);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_lru_touch)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

std::vector<std::uint64_t> random_keys(std::size_t count, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<std::uint64_t> keys(count);
    for (std::uint64_t& k : keys) k = rng.next();
    return keys;
}

// Lookups of keys that are present (hit) or absent (miss) in an index of range(0) entries.
void index_find(benchmark::State& state, bool hit) {
    const std::vector<std::uint64_t> present = random_keys(static_cast<std::size_t>(state.range(0)), 3);
    const std::vector<std::uint64_t> absent = random_keys(present.size(), 4);
    model::FlatIndex index;
    // A value names its key, as a segment id does in the model.
    const auto is_key = [&](std::uint64_t key) {
        return [&present, key](std::uint32_t v) { return present[v] == key; };
    };
    for (std::size_t i = 0; i < present.size(); ++i)
        index.put(present[i], static_cast<std::uint32_t>(i), is_key(present[i]));
    const std::vector<std::uint64_t>& probes = hit ? present : absent;
    std::size_t next = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(index.find(probes[next], is_key(probes[next])));
        next = next + 1 == probes.size() ? 0 : next + 1;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
void BM_index_find_hit(benchmark::State& state) { index_find(state, true); }
void BM_index_find_miss(benchmark::State& state) { index_find(state, false); }
BENCHMARK(BM_index_find_hit)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);
BENCHMARK(BM_index_find_miss)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

// A put of a new key and the erase of the oldest one per iteration, at a steady size of range(0).
void BM_index_put_erase(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    const std::vector<std::uint64_t> keys = random_keys(size * 2, 5);
    model::FlatIndex index;
    const auto is_key = [&](std::uint64_t key) { return [&keys, key](std::uint32_t v) { return keys[v] == key; }; };
    for (std::size_t i = 0; i < size; ++i) index.put(keys[i], static_cast<std::uint32_t>(i), is_key(keys[i]));
    std::size_t oldest = 0;
    std::size_t newest = size;
    for (auto _ : state) {
        index.erase(keys[oldest], static_cast<std::uint32_t>(oldest));
        index.put(keys[newest], static_cast<std::uint32_t>(newest), is_key(keys[newest]));
        oldest = oldest + 1 == keys.size() ? 0 : oldest + 1;
        newest = newest + 1 == keys.size() ? 0 : newest + 1;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["entries"] = static_cast<double>(index.size());
}
BENCHMARK(BM_index_put_erase)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

}  // namespace
