// Schedule export: reconstructs each read's provenance from the state table and the slot owners.
#include "sim/schedules.hpp"

#include <algorithm>
#include <cstdio>

#include "model/core.hpp"
#include "sim/files.hpp"

namespace kvcheck::sim {

int token_at(const model::RequestSpec& spec, std::uint32_t position) {
    return static_cast<int>(mix64(spec.key(position + 1)) % 256);
}

ScheduleExporter::ScheduleExporter(std::string dir, const Scenario& scenario, std::string policy, std::uint64_t seed,
                                   std::uint32_t max_schedules)
    : dir_(std::move(dir)), scenario_(scenario.name), policy_(std::move(policy)), seed_(seed), max_schedules_(max_schedules) {
    ensure_directory(dir_);
}

void ScheduleExporter::remember(const std::shared_ptr<const model::RequestSpec>& spec) { specs_[spec->uid] = spec; }

void ScheduleExporter::note_fault(const model::World&, const model::Step& step, FaultClass fault, const std::string& what) {
    faults_[step.target].push_back(std::string(fault_name(fault)) + " " + what);
}

void ScheduleExporter::note_loaded(std::uint32_t segment, std::uint32_t epoch) { loaded_.insert({segment, epoch}); }

namespace {

nlohmann::json tokens_of(const model::RequestSpec& spec, std::uint32_t end) {
    nlohmann::json out = nlohmann::json::array();
    for (std::uint32_t p = 0; p < end; ++p) out.push_back(token_at(spec, p));
    return out;
}

}  // namespace

void ScheduleExporter::export_read(const model::World& w, std::uint32_t r, const std::vector<model::Violation>& violations) {
    if (written_ >= max_schedules_) return;
    const model::Request& q = w.requests[r];
    const model::RequestSpec& spec = *q.spec;
    nlohmann::json reads = nlohmann::json::array();
    nlohmann::json faults = nlohmann::json::array();
    nlohmann::json events = nlohmann::json::array();
    for (const model::ReadFact& f : model::read_facts(w, r)) {
        const model::PlanEntry& e = f.entry;
        nlohmann::json read = {{"group", e.group}, {"form", model::form_name(e.form)}, {"start", e.start}, {"end", e.end}};
        nlohmann::json source = nullptr;
        std::string damage = "none";
        nlohmann::json transport = nlohmann::json::array();
        if (f.present && e.slot != model::kNone) {
            const model::Slot& slot = w.slots[e.slot];
            const std::uint32_t writer = slot.owner != model::kNone ? slot.owner : (f.epoch_ok ? e.segment : model::kNone);
            if (f.expected == f.actual) {
                source = {{"tokens", "request"}, {"start", e.form == model::Form::linear_state ? 0 : e.start}, {"end", e.end},
                          {"weights_version", w.kv_version}, {"layout", w.current_layout(e.group)},
                          {"index_weights_version", w.kv_version}};
            } else if (writer != model::kNone && specs_.count(w.segments[writer].owner) != 0) {
                const model::Segment& ws = w.segments[writer];
                const model::RequestSpec& by = *specs_.at(ws.owner);
                const bool linear = ws.form == model::Form::linear_state;
                const std::uint32_t end = linear ? ws.anchor : ws.end;
                std::uint32_t index_version = ws.kv_version;
                if (ws.form == model::Form::indexer_state) {
                    const auto kv_group = static_cast<std::uint8_t>(w.group(ws.group).indexed_group);
                    const std::uint32_t kv = w.find(ws.key, kv_group, false);
                    if (kv == model::kNone || w.segments[kv].data_version != ws.indexed_version) index_version += 1000;
                }
                source = {{"tokens", tokens_of(by, end)}, {"start", linear ? 0 : ws.start}, {"end", end},
                          {"weights_version", ws.kv_version}, {"layout", ws.layout_id}, {"index_weights_version", index_version}};
                if (slot.content == 0) damage = "unwritten";
                else if (!ws.whole) damage = ws.stage == model::Stage::evicting ? "lost_half" : "lost_block";
                else if (!f.aligned) damage = "misaligned";
            }
            if (f.present && loaded_.count({e.segment, e.epoch}) != 0) transport = {"offload", "load"};
        }
        read["source"] = source;
        read["transport"] = transport;
        read["damage"] = damage;
        reads.push_back(read);
        if (f.present)
            if (auto it = faults_.find(e.segment); it != faults_.end())
                for (const std::string& text : it->second) {
                    faults.push_back(text);
                    events.push_back({{"step", 0}, {"what", text}});
                }
    }
    nlohmann::json groups = nlohmann::json::array();
    nlohmann::json layouts = nlohmann::json::array();
    for (std::uint8_t g = 0; g < w.config->groups.size(); ++g) {
        const model::CacheGroup& grp = w.group(g);
        groups.push_back({{"name", grp.name}, {"kind", model::group_kind_name(grp.kind)}, {"block_tokens", grp.block_tokens},
                          {"segment_tokens", grp.segment_tokens}, {"window_tokens", grp.window_tokens},
                          {"compress_ratio", grp.compress_ratio}, {"indexer_top_k", grp.indexer_top_k},
                          {"indexed_group", std::max(0, grp.indexed_group)}});
        layouts.push_back(w.current_layout(g));
    }
    nlohmann::json invariants = nlohmann::json::array();
    bool corrupt = false;
    for (const model::Violation& v : violations) {
        if (std::find(invariants.begin(), invariants.end(), v.invariant) == invariants.end()) invariants.push_back(v.invariant);
        corrupt = corrupt || model::corrupts_output(v.invariant);
    }
    const nlohmann::json doc = {{"schema", "kvcheck.schedule/1"},
                                {"scenario", scenario_},
                                {"policy", policy_},
                                {"seed", seed_},
                                {"request", spec.uid},
                                {"model", {{"preset", w.config->name}, {"groups", groups}}},
                                {"weights_version", w.kv_version},
                                {"layouts", layouts},
                                {"tokens", tokens_of(spec, spec.input_tokens)},
                                {"resume_len", q.resume_len},
                                {"prefill_chunk_tokens", w.derived.lcm_tokens},
                                {"decode_steps", std::min<std::uint32_t>(spec.output_tokens, 4)},
                                {"reads", reads},
                                {"events", events},
                                {"faults", faults},
                                {"oracle", {{"corrupt", corrupt}, {"invariants", invariants}}}};
    char name[64];
    std::snprintf(name, sizeof name, "/request-%08u.json", spec.uid);
    write_file_atomic(dir_ + name, doc.dump(1) + "\n");
    ++written_;
}

}  // namespace kvcheck::sim
