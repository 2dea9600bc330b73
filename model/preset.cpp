// Preset table and derived figures. Figures follow the public model descriptions collected in
// docs/presets.md; where a figure is a modelling choice (segment lengths) the description says so.
#include "model/preset.hpp"

#include <algorithm>
#include <numeric>

namespace kvcheck::model {

std::string_view form_name(Form form) {
    switch (form) {
        case Form::compressed_kv: return "compressed_kv";
        case Form::uncompressed_tail: return "uncompressed_tail";
        case Form::swa_window: return "swa_window";
        case Form::indexer_state: return "indexer_state";
        case Form::on_disk_prefix: return "on_disk_prefix";
        case Form::linear_state: return "linear_state";
    }
    return "?";
}

std::optional<Form> form_from_name(std::string_view name) {
    for (Form f : kAllForms)
        if (form_name(f) == name) return f;
    return std::nullopt;
}

std::string_view group_kind_name(GroupKind kind) {
    switch (kind) {
        case GroupKind::full: return "full";
        case GroupKind::swa: return "swa";
        case GroupKind::chunked: return "chunked";
        case GroupKind::indexer: return "indexer";
        case GroupKind::linear: return "linear";
    }
    return "?";
}

std::optional<GroupKind> group_kind_from_name(std::string_view name) {
    for (GroupKind k : {GroupKind::full, GroupKind::swa, GroupKind::chunked, GroupKind::indexer, GroupKind::linear})
        if (group_kind_name(k) == name) return k;
    return std::nullopt;
}

std::uint64_t segment_bytes(const CacheGroup& group, std::uint32_t tokens) {
    if (group.kind == GroupKind::linear) return std::uint64_t{group.state_bytes_layer} * group.layers;
    const std::uint64_t ratio = std::max<std::uint32_t>(1, group.compress_ratio);
    const std::uint64_t entries = (tokens + ratio - 1) / ratio;
    return entries * group.bytes_per_token_layer * group.layers;
}

Derived derive(const ModelConfig& config) {
    Derived d;
    d.lcm_tokens = 1;
    d.min_block_tokens = config.groups.empty() ? 1 : config.groups.front().block_tokens;
    for (const CacheGroup& g : config.groups) {
        const std::uint32_t usual = g.kind == GroupKind::full ? g.segment_tokens : g.block_tokens;
        d.group_bytes.push_back({usual, segment_bytes(g, usual), std::uint64_t{g.bytes_per_token_layer} * g.layers,
                                 g.kind == GroupKind::linear});
        const GroupBytes& b = d.group_bytes.back();
        const std::uint64_t least = g.kind == GroupKind::full && g.segment_tokens > g.block_tokens
                                        ? std::min(b.usual_bytes, b.raw_bytes_per_token * g.block_tokens)
                                        : b.usual_bytes;
        d.min_entry_bytes = d.group_bytes.size() == 1 ? least : std::min(d.min_entry_bytes, least);
        d.lcm_tokens = std::lcm(d.lcm_tokens, g.block_tokens);
        d.min_block_tokens = std::min(d.min_block_tokens, g.block_tokens);
        const Form form = primary_form(g);
        d.form_present[static_cast<int>(form)] = true;
        const std::uint64_t ratio = std::max<std::uint32_t>(1, g.compress_ratio);
        const std::uint64_t per_token =
            g.kind == GroupKind::linear ? 0 : std::uint64_t{g.bytes_per_token_layer} * g.layers / ratio;
        d.bytes_per_token_by_form[static_cast<int>(form)] += per_token;
        if (g.kind == GroupKind::full && g.segment_tokens > g.block_tokens) {
            d.form_present[static_cast<int>(Form::uncompressed_tail)] = true;
            d.bytes_per_token_by_form[static_cast<int>(Form::uncompressed_tail)] +=
                std::uint64_t{g.bytes_per_token_layer} * g.layers;
        }
    }
    // Every preset can spill to the host/disk tier; the on-disk copy costs what the GPU copy did.
    d.form_present[static_cast<int>(Form::on_disk_prefix)] = true;
    for (Form f : kAllForms)
        if (f != Form::on_disk_prefix)
            d.bytes_per_token_by_form[static_cast<int>(Form::on_disk_prefix)] +=
                d.bytes_per_token_by_form[static_cast<int>(f)];
    return d;
}

namespace {

CacheGroup full_group(std::string name, std::uint32_t layers, std::uint32_t block, std::uint32_t segment,
                      std::uint32_t ratio, std::uint32_t bytes, std::uint16_t layout) {
    CacheGroup g;
    g.name = std::move(name);
    g.kind = GroupKind::full;
    g.layers = layers;
    g.block_tokens = block;
    g.segment_tokens = segment;
    g.compress_ratio = ratio;
    g.bytes_per_token_layer = bytes;
    g.layout_id = layout;
    return g;
}

CacheGroup window_group(std::string name, GroupKind kind, std::uint32_t layers, std::uint32_t block,
                        std::uint32_t window, std::uint32_t bytes, std::uint16_t layout) {
    CacheGroup g;
    g.name = std::move(name);
    g.kind = kind;
    g.layers = layers;
    g.block_tokens = block;
    g.segment_tokens = block;
    g.window_tokens = window;
    g.bytes_per_token_layer = bytes;
    g.layout_id = layout;
    return g;
}

CacheGroup indexer_group(std::string name, std::uint32_t layers, std::uint32_t block, std::uint32_t bytes,
                         std::uint32_t top_k, int indexed) {
    CacheGroup g;
    g.name = std::move(name);
    g.kind = GroupKind::indexer;
    g.layers = layers;
    g.block_tokens = block;
    g.segment_tokens = block;
    g.bytes_per_token_layer = bytes;
    g.indexer_top_k = top_k;
    g.indexed_group = indexed;
    g.layout_id = 3;
    return g;
}

CacheGroup linear_group(std::string name, std::uint32_t layers, std::uint32_t block, std::uint32_t state_bytes) {
    CacheGroup g;
    g.name = std::move(name);
    g.kind = GroupKind::linear;
    g.layers = layers;
    g.block_tokens = block;
    g.segment_tokens = block;
    g.state_bytes_layer = state_bytes;
    g.layout_id = 4;
    return g;
}

std::vector<ModelConfig> build_presets() {
    std::vector<ModelConfig> all;
    all.push_back({"deepseek-v32",
                   "DeepSeek-V3.2: 61 MLA layers (fp8 656 B/token/layer) with a DSA indexer K cache "
                   "(132 B/token/layer, top-k 2048) sharing the 64-token block table",
                   {full_group("mla", 61, 64, 64, 1, 656, 1), indexer_group("indexer", 61, 64, 132, 2048, 0)},
                   12'000});
    all.push_back(
        {"deepseek-v4",
         "DeepSeek-V4: c4 (4x compressed, sparse, indexer top-512) and c128 (128x compressed) "
         "groups, every layer also SWA 128, 256-token logical block, fp8 entry 584 B; a logical "
         "block holds whole compression segments, so block-aligned resumes need no raw tail",
         {full_group("c4", 31, 256, 256, 4, 584, 1), full_group("c128", 30, 256, 256, 128, 584, 1),
          window_group("swa", GroupKind::swa, 61, 64, 128, 584, 2), indexer_group("indexer", 31, 256, 132, 512, 0)},
         15'000});
    all.push_back(
        {"gemma3-27b",
         "Gemma 3 27B: 52 SWA-1024 layers and 10 full layers, 8,192 B/token/layer",
         {window_group("swa", GroupKind::swa, 52, 64, 1024, 8192, 2), full_group("full", 10, 64, 64, 1, 8192, 1)},
         9'000});
    all.push_back(
        {"gpt-oss-120b",
         "gpt-oss-120b: 18 SWA-128 and 18 full layers alternating, 2,048 B/token/layer",
         {window_group("swa", GroupKind::swa, 18, 64, 128, 2048, 2), full_group("full", 18, 64, 64, 1, 2048, 1)},
         25'000});
    all.push_back({"llama4-scout",
                   "Llama 4 Scout: 36 chunked-attention layers (chunk 8192) and 12 full layers, 4,096 B/token/layer",
                   {window_group("chunked", GroupKind::chunked, 36, 256, 8192, 4096, 2),
                    full_group("full", 12, 256, 256, 1, 4096, 1)},
                   18'000});
    all.push_back(
        {"qwen3-next",
         "Qwen3-Next-80B: 36 Gated DeltaNet layers (fp32 recurrent state, checkpoints only at "
         "784-token block boundaries) and 12 gated attention layers, 2,048 B/token/layer",
         {linear_group("deltanet", 36, 784, 2 * 1024 * 1024), full_group("attention", 12, 784, 784, 1, 2048, 1)},
         30'000});
    all.push_back({"toy",
                   "Small hybrid model for tests and exhaustive checks: two full groups (plain, and 4x "
                   "compressed with 64-token segments), SWA 32, an indexer over the plain group and a "
                   "linear-state group with 32-token checkpoints",
                   {full_group("c1", 2, 16, 16, 1, 64, 1), full_group("c4", 2, 16, 64, 4, 64, 1),
                    window_group("swa", GroupKind::swa, 2, 16, 32, 64, 2), indexer_group("indexer", 2, 16, 16, 4, 0),
                    linear_group("linear", 2, 32, 256)},
                   1'000});
    return all;
}

}  // namespace

const std::vector<ModelConfig>& presets() {
    static const std::vector<ModelConfig> kTable = build_presets();
    return kTable;
}

const ModelConfig* find_preset(std::string_view name) {
    for (const ModelConfig& c : presets())
        if (c.name == name) return &c;
    return nullptr;
}

std::string config_problem(const ModelConfig& config) {
    if (config.groups.empty()) return "a model needs at least one cache group";
    bool has_full = false;
    for (const CacheGroup& g : config.groups) has_full = has_full || g.kind == GroupKind::full;
    if (!has_full) return "a model needs at least one full-attention group (the prefix index is keyed on it)";
    if (config.groups.size() > kMaxGroups) return "at most 16 cache groups are supported";
    for (std::size_t i = 0; i < config.groups.size(); ++i) {
        const CacheGroup& g = config.groups[i];
        const std::string where = "group " + std::to_string(i) + " (" + g.name + "): ";
        if (g.block_tokens == 0) return where + "block_tokens must be positive";
        if (g.layers == 0) return where + "layers must be positive";
        if (g.segment_tokens == 0 || g.segment_tokens % g.block_tokens != 0)
            return where + "segment_tokens must be a positive multiple of block_tokens";
        if ((g.kind == GroupKind::swa || g.kind == GroupKind::chunked) && g.window_tokens == 0)
            return where + "a window group needs window_tokens > 0";
        if (g.kind == GroupKind::indexer) {
            if (g.indexed_group < 0 || static_cast<std::size_t>(g.indexed_group) >= config.groups.size() ||
                config.groups[static_cast<std::size_t>(g.indexed_group)].kind != GroupKind::full)
                return where + "indexed_group must name a full group";
            const CacheGroup& kv = config.groups[static_cast<std::size_t>(g.indexed_group)];
            if (kv.block_tokens != g.block_tokens || kv.segment_tokens != kv.block_tokens)
                return where +
                       "the indexed group must have segment_tokens == block_tokens == the indexer's block_tokens";
        }
        if (g.kind == GroupKind::linear && g.state_bytes_layer == 0)
            return where + "a linear group needs state_bytes_layer > 0";
    }
    const Derived d = derive(config);
    if (d.lcm_tokens > (1u << 20)) return "the LCM of the groups' block sizes exceeds 1,048,576 tokens";
    return {};
}

}  // namespace kvcheck::model
