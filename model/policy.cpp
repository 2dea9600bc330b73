// The policy table. Each mutant removes exactly one defense; `breaks` names the invariant that the
// checker is expected to see violated, and the mutation tests hold the table to it.
#include "model/policy.hpp"

namespace kvcheck::model {

namespace {

template <typename Switch>
PolicyInfo mutant(std::string name, std::string removes, std::string breaks, Switch switch_off) {
    PolicyInfo info{std::move(name), std::move(removes), std::move(breaks), Defenses{}};
    switch_off(info.defenses);
    return info;
}

std::vector<PolicyInfo> build() {
    std::vector<PolicyInfo> all;
    all.push_back({"validated", "", "", Defenses{}});
    Defenses naive;
    naive.hash_hit_is_enough = true;
    naive.group_intersection = false;
    naive.lcm_boundary = false;
    naive.layout_check = false;
    naive.alignment_check = false;
    naive.revalidate = false;
    naive.graph_guard = false;
    naive.swa_window_check = false;
    naive.index_version_check = false;
    naive.residency_check = false;
    naive.tail_boundary_check = false;
    naive.whole_segment_check = false;
    all.push_back({"naive",
                   "every resumability check, the epoch re-check and the graph-capture guard (hash hit => reuse)",
                   "OR1_ground_truth", naive});
    all.push_back(mutant("max-group", "VL3 intersection of cache groups (uses the maximum)", "VL3_group_intersection",
                         [](Defenses& d) { d.group_intersection = false; }));
    all.push_back(
        mutant("no-lcm", "VL1 LCM block boundary", "VL1_lcm_boundary", [](Defenses& d) { d.lcm_boundary = false; }));
    all.push_back(mutant("no-layout-check", "VL2 kernel layout check", "VL2_layout",
                         [](Defenses& d) { d.layout_check = false; }));
    all.push_back(mutant("no-align", "VL4 alignment check after reload", "VL4_alignment",
                         [](Defenses& d) { d.alignment_check = false; }));
    all.push_back(mutant("no-admission-cap", "RL1 admission cap", "RL1_admission_cap",
                         [](Defenses& d) { d.admission_cap = false; }));
    all.push_back(mutant("shared-freelist", "RL2 one free list per form", "RL2_form_separation",
                         [](Defenses& d) { d.separate_freelists = false; }));
    all.push_back(mutant("no-revalidate", "RL3 epoch re-check after pinning", "RL3_toctou",
                         [](Defenses& d) { d.revalidate = false; }));
    all.push_back(mutant("no-pin", "RL3 pinning of hits", "RL3_toctou", [](Defenses& d) { d.pin = false; }));
    all.push_back(mutant("no-graph-guard", "RL4 graph-capture guard", "RL4_graph_topology",
                         [](Defenses& d) { d.graph_guard = false; }));
    all.push_back(mutant("no-swa-expiry", "FM3 window liveness (\"was once valid\" taken for \"valid now\")",
                         "FM3_swa_window", [](Defenses& d) { d.swa_window_check = false; }));
    all.push_back(mutant("no-index-version", "FM4 index version check", "FM4_index_version",
                         [](Defenses& d) { d.index_version_check = false; }));
    all.push_back(mutant("registered-is-resident", "FM5 residency check", "FM5_resident",
                         [](Defenses& d) { d.residency_check = false; }));
    all.push_back(mutant("no-tail-boundary", "FM2 tail alignment to the compression boundary", "FM2_tail_boundary",
                         [](Defenses& d) { d.tail_boundary_check = false; }));
    all.push_back(mutant("partial-segment-ok", "FM1 whole-segment check", "FM1_segment_whole",
                         [](Defenses& d) { d.whole_segment_check = false; }));
    all.push_back(mutant("late-pin-across-groups", "pin every group's hits before allocating", "RL3_toctou",
                         [](Defenses& d) { d.pin_all_groups_first = false; }));
    all.push_back(mutant("hash-before-complete", "publish a hash only after the content is written", "OR1_ground_truth",
                         [](Defenses& d) { d.publish_after_complete = false; }));
    all.push_back(mutant("min-block-size-index", "index a group's state with its own block size", "OR1_ground_truth",
                         [](Defenses& d) { d.own_block_size_index = false; }));
    all.push_back(mutant("sticky-lookup", "drop the lookup verdict when a load fails", "FM5_resident",
                         [](Defenses& d) { d.drop_verdict_on_failed_load = false; }));
    all.push_back(mutant("first-group-only-truncate", "cut every group of a kind to the common length",
                         "VL3_group_intersection", [](Defenses& d) { d.truncate_every_group = false; }));
    all.push_back(mutant("kv-without-index", "restore indexer pages together with KV", "OR1_ground_truth",
                         [](Defenses& d) { d.restore_index_with_kv = false; }));
    all.push_back(mutant("trust-partial-load", "F2 load-length check (a short load fails)", "OR1_ground_truth",
                         [](Defenses& d) { d.load_length_check = false; }));
    all.push_back(
        mutant("rollout-leak",
               "the rollout mode's reuse scope (off: no reuse; intra-request: the request's and its samples' entries)",
               "RO1_rollout_scope", [](Defenses& d) { d.rollout_scope = false; }));
    return all;
}

}  // namespace

const std::vector<PolicyInfo>& policies() {
    static const std::vector<PolicyInfo> kTable = build();
    return kTable;
}

const PolicyInfo* find_policy(std::string_view name) {
    for (const PolicyInfo& p : policies())
        if (p.name == name) return &p;
    return nullptr;
}

std::string policy_names() {
    std::string out;
    for (const PolicyInfo& p : policies()) {
        if (!out.empty()) out += ", ";
        out += p.name;
    }
    return out;
}

}  // namespace kvcheck::model
