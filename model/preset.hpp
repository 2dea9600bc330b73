// Model presets: a hybrid architecture described as cache groups, plus the figures derived from
// them (LCM boundary, forms present, bytes per token per form). Presets are data, not code paths.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvcheck::model {

// The five cache forms of the design plus the recurrent-state extension for linear attention.
enum class Form : std::uint8_t {
    compressed_kv,
    uncompressed_tail,
    swa_window,
    indexer_state,
    on_disk_prefix,
    linear_state,
};
inline constexpr int kFormCount = 6;
inline constexpr std::array<Form, kFormCount> kAllForms = {Form::compressed_kv,  Form::uncompressed_tail,
                                                           Form::swa_window,     Form::indexer_state,
                                                           Form::on_disk_prefix, Form::linear_state};
std::string_view form_name(Form form);
std::optional<Form> form_from_name(std::string_view name);

// How a group's layers attend; decides which forms the group stores and what "resumable" means.
enum class GroupKind : std::uint8_t {
    full,     // full-history KV; compress_ratio 1 is plain attention, >1 compresses per segment
    swa,      // sliding window of window_tokens
    chunked,  // local attention inside fixed chunks of window_tokens
    indexer,  // sparse-routing index over another group's KV
    linear,   // recurrent / linear-attention state, checkpointed at exact positions
};
inline constexpr std::size_t kGroupKinds = static_cast<std::size_t>(GroupKind::linear) + 1;
inline constexpr std::size_t kMaxGroups = 16;  // config_problem() refuses more; a segment stores its group in 4 bits
std::string_view group_kind_name(GroupKind kind);
std::optional<GroupKind> group_kind_from_name(std::string_view name);

struct CacheGroup {
    std::string name;
    GroupKind kind = GroupKind::full;
    std::uint32_t layers = 1;
    std::uint32_t block_tokens = 16;    // allocation and hashing granularity of the group
    std::uint32_t segment_tokens = 16;  // full groups: tokens per compressed segment (whole or nothing)
    std::uint32_t window_tokens = 0;    // swa: window W; chunked: chunk size
    std::uint32_t compress_ratio = 1;   // full groups: tokens folded into one stored entry
    std::uint32_t bytes_per_token_layer = 0;
    std::uint32_t state_bytes_layer = 0;  // linear: fixed-size recurrent state per checkpoint
    std::uint32_t indexer_top_k = 0;
    int indexed_group = -1;       // indexer: which group's KV it routes over
    std::uint16_t layout_id = 1;  // kernel layout the group's blocks are written in
};

struct ModelConfig {
    std::string name;
    std::string description;
    std::vector<CacheGroup> groups;
    std::uint64_t prefill_tokens_per_s = 20'000;  // compute model for recompute cost / TTFT
};

// A group's stored sizes, precomputed so that sizing the usual entry needs no division.
struct GroupBytes {
    std::uint32_t usual_tokens = 0;         // the length almost every entry has: a segment (full) or a block
    std::uint64_t usual_bytes = 0;          // segment_bytes(group, usual_tokens)
    std::uint64_t raw_bytes_per_token = 0;  // uncompressed, over all layers: what a tail block costs per token
    bool size_fixed = false;                // linear state: a checkpoint costs the same at every position
};

// Derived figures, computed once per config.
struct Derived {
    std::uint32_t lcm_tokens = 1;        // VL1: every hit length lies on this boundary
    std::uint32_t min_block_tokens = 1;  // what the `min-block-size-index` mutant wrongly uses
    std::array<std::uint64_t, kFormCount> bytes_per_token_by_form{};  // summed over layers
    std::array<bool, kFormCount> form_present{};
    std::vector<GroupBytes> group_bytes;  // per group, in config order
    // The fewest bytes an entry that holds any occupies (World::bytes_of): one unit of a group,
    // or one tail block. Only parts of shed window extents hold fewer, none at all.
    std::uint64_t min_entry_bytes = 0;
};
Derived derive(const ModelConfig& config);

// Bytes one stored segment of `tokens` tokens occupies for a group.
std::uint64_t segment_bytes(const CacheGroup& group, std::uint32_t tokens);

// The forms a group stores on the GPU. Full groups store compressed segments and, when the
// segment is longer than a block, an uncompressed tail; on-disk copies are form on_disk_prefix.
inline Form primary_form(const CacheGroup& group) {
    switch (group.kind) {
        case GroupKind::full: return Form::compressed_kv;
        case GroupKind::swa:
        case GroupKind::chunked: return Form::swa_window;
        case GroupKind::indexer: return Form::indexer_state;
        case GroupKind::linear: return Form::linear_state;
    }
    return Form::compressed_kv;
}

const std::vector<ModelConfig>& presets();
const ModelConfig* find_preset(std::string_view name);

// Describes what is wrong with a config (empty when valid); loaders turn this into input errors.
std::string config_problem(const ModelConfig& config);

}  // namespace kvcheck::model
