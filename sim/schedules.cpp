// Schedule export: reconstructs each read's provenance from the state table and the slot owners.
#include "sim/schedules.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "model/core.hpp"
#include "model/walk.hpp"
#include "sim/files.hpp"
#include "sim/json_fields.hpp"

namespace kvcheck::sim {

int token_at(const model::RequestSpec& spec, std::uint32_t position) {
    return static_cast<int>(mix64(spec.key(position + 1)) % 256);
}

ScheduleExporter::ScheduleExporter(std::string dir, const Scenario& scenario, std::string policy, std::uint64_t seed,
                                   std::uint32_t max_schedules)
    : dir_(std::move(dir)), scenario_(scenario.name), policy_(std::move(policy)), seed_(seed), max_schedules_(max_schedules) {
    ensure_directory(dir_);
    remove_schedules(dir_);
}

ScheduleExporter::~ScheduleExporter() {
    if (finished_) return;
    std::error_code ec;
    for (const std::string& file : files_) std::filesystem::remove(file, ec);
}

void remove_schedules(const std::string& dir) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file(ec) && name.starts_with("request-") && name.ends_with(".json")) remove_stale(entry.path().string());
    }
}

void ScheduleExporter::remember(const std::shared_ptr<const model::RequestSpec>& spec) { specs_[spec->uid] = spec; }

namespace {

// How many fault notes one content or the global list keeps: the latest ones matter to a resume.
constexpr std::size_t kFaultNotesKept = 8;

}  // namespace

void ScheduleExporter::note_fault(const model::World& w, const model::Step& step, FaultClass fault, const std::string& what,
                                  std::uint64_t step_number) {
    FaultNote note{step_number, std::string(fault_name(fault)) + " " + what};
    std::uint32_t segment = model::kNone;
    switch (step.kind) {
        case model::StepKind::io_fail:
        case model::StepKind::misaligned_reload:
        case model::StepKind::partial_load: segment = w.io[step.target].segment; break;
        case model::StepKind::bump_model_version:
        case model::StepKind::change_layout: break;
        default: segment = step.target; break;
    }
    std::vector<FaultNote>& notes =
        segment == model::kNone ? global_faults_
                                 : faults_[{w.segments[segment].group, w.segments[segment].is_tail, w.segments[segment].key}];
    if (notes.size() == kFaultNotesKept) notes.erase(notes.begin());
    notes.push_back(std::move(note));
}

void ScheduleExporter::note_loaded(std::uint32_t segment, std::uint32_t epoch) { loaded_.insert({segment, epoch}); }

void ScheduleExporter::note_torn(std::uint32_t segment, std::uint32_t epoch) { torn_.insert({segment, epoch}); }

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
    std::vector<FaultNote> touched;  // faults that touched a read's content
    bool stale_config = false;       // a read was written under other weights or another layout
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
            } else if (writer != model::kNone && specs_.count(w.owner_uid(w.segments[writer])) != 0) {
                const model::Segment& ws = w.segments[writer];
                const model::RequestSpec& by = *specs_.at(w.owner_uid(ws));
                const bool linear = ws.form == model::Form::linear_state;
                // What the slot holds where the read looks: the read's part of an extent, or the
                // whole entry when the read is not inside it.
                const bool inside = !linear && w.start_of(ws) <= e.start && e.end <= ws.end;
                const std::uint32_t start = inside ? e.start : w.start_of(ws);
                const std::uint32_t end = linear ? w.anchor_of(ws) : inside ? e.end : ws.end;
                std::uint32_t index_version = ws.kv_version;
                if (ws.form == model::Form::indexer_state) {
                    const auto kv_group = static_cast<std::uint8_t>(w.group(ws.group).indexed_group);
                    const std::uint32_t kv = model::covering_entry(w, by, kv_group, start + w.group(ws.group).block_tokens);
                    if (kv == model::kNone || w.segments[kv].data_version() != ws.indexed_version()) index_version += 1000;
                }
                source = {{"tokens", tokens_of(by, end)}, {"start", start}, {"end", end},
                          {"weights_version", ws.kv_version}, {"layout", ws.layout_id}, {"index_weights_version", index_version}};
                if (slot.content == 0) damage = "unwritten";
                else if (!ws.whole) damage = ws.stage == model::Stage::evicting ? "lost_half" : "lost_block";
                else if (!f.aligned) damage = "misaligned";
                else if (torn_.count({writer, ws.epoch}) != 0) damage = "torn";
            }
            if (f.present && loaded_.count({e.segment, e.epoch}) != 0) transport = {"offload", "load"};
        }
        read["source"] = source;
        read["transport"] = transport;
        read["damage"] = damage;
        reads.push_back(read);
        // The content this read should hold, and the content its segment holds when that differs.
        const auto note_touched = [&](std::uint8_t group, bool tail, std::uint64_t key) {
            if (auto it = faults_.find({group, tail, key}); it != faults_.end())
                touched.insert(touched.end(), it->second.begin(), it->second.end());
        };
        note_touched(e.group, e.form == model::Form::uncompressed_tail, spec.key(e.end));
        if (f.present && e.segment != model::kNone) {
            const model::Segment& held = w.segments[e.segment];
            note_touched(held.group, held.is_tail, held.key);
        }
        stale_config = stale_config || (source.is_object() && (source["weights_version"] != w.kv_version ||
                                                               source["layout"] != w.current_layout(e.group)));
    }
    if (stale_config) touched.insert(touched.end(), global_faults_.begin(), global_faults_.end());
    std::sort(touched.begin(), touched.end(), [](const FaultNote& a, const FaultNote& b) { return a.step < b.step; });
    touched.erase(std::unique(touched.begin(), touched.end(),
                              [](const FaultNote& a, const FaultNote& b) { return a.step == b.step && a.what == b.what; }),
                  touched.end());
    for (const FaultNote& note : touched) {
        faults.push_back(note.what);
        events.push_back({{"step", note.step}, {"what", note.what}});
    }
    nlohmann::json groups = nlohmann::json::array();
    nlohmann::json layouts = nlohmann::json::array();
    for (std::uint8_t g = 0; g < w.config->groups.size(); ++g) {
        const model::CacheGroup& grp = w.group(g);
        groups.push_back(cache_group_json(grp));
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
    files_.push_back(dir_ + name);
    write_file_atomic(files_.back(), doc.dump(1) + "\n");
    ++written_;
}

}  // namespace kvcheck::sim
