// Cache-manager policies under test: the validated design, the naive old rule and one mutant per
// removed defense. A policy is a set of defense switches; the model consults them at each step.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvcheck::model {

struct Defenses {
    bool group_intersection = true;           // VL3: usable length is the minimum over groups, not the maximum
    bool lcm_boundary = true;                 // VL1: hit lengths on the LCM of all block sizes
    bool layout_check = true;                 // VL2: reading kernel layout matches the segment's layout
    bool alignment_check = true;              // VL4: address and length aligned, esp. after reload
    bool admission_cap = true;                // RL1: evict by form priority before exceeding the GPU budget
    bool separate_freelists = true;           // RL2: one free list per form, labels cleared on free
    bool revalidate = true;                   // RL3: re-check epochs after pinning
    bool pin = true;                          // RL3: pin hits so nothing evicts them before the read
    bool graph_guard = true;                  // RL4: no address under a live graph moves without recapture
    bool swa_window_check = true;             // FM3: the whole window [pos-W, pos) is live now
    bool index_version_check = true;          // FM4: index version equals KV version
    bool residency_check = true;              // FM5: registered on disk is not resident
    bool tail_boundary_check = true;          // FM2: tail starts exactly at the compression boundary
    bool whole_segment_check = true;          // FM1: a compressed segment is whole or useless
    bool pin_all_groups_first = true;         // pin every group's hits before allocating for any group
    bool publish_after_complete = true;       // a block's hash is published only once its content is written
    bool own_block_size_index = true;         // a group's state is indexed with its own block size
    bool drop_verdict_on_failed_load = true;  // a failed load invalidates the lookup verdict
    bool truncate_every_group = true;         // every group, not just the first of a kind, is cut to the common length
    bool restore_index_with_kv = true;        // a KV reload from a lower tier restores its indexer pages too
    bool load_length_check = true;            // F2: a load that delivered fewer bytes than the segment holds failed
    bool rollout_scope = true;  // the rollout mode's reuse scope: none under off, the request's own under intra-request
    bool hash_hit_is_enough = false;  // the old rule: a hash hit on the first group is reused as is
};

struct PolicyInfo {
    std::string name;
    std::string removes;  // the defense this policy lacks ("" for validated)
    std::string breaks;   // the invariant it is expected to break ("" for validated)
    Defenses defenses;
};

const std::vector<PolicyInfo>& policies();
const PolicyInfo* find_policy(std::string_view name);
std::string policy_names();  // comma-separated, for error messages

}  // namespace kvcheck::model
