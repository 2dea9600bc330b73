// Schedule export: reconstructs each read's provenance from the state table and the slot owners.
#include "sim/des/schedules.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "model/core.hpp"
#include "model/walk.hpp"
#include "sim/format/schedule.hpp"
#include "sim/io/files.hpp"
#include "sim/io/json_fields.hpp"

namespace kvcheck::sim {

int token_at(const model::RequestSpec& spec, std::uint32_t position) {
    return static_cast<int>(mix64(spec.key(position + 1)) % 256);
}

ScheduleExporter::ScheduleExporter(std::string dir, const Scenario& scenario, std::string policy, std::uint64_t seed,
                                   std::uint32_t max_schedules)
    : dir_(std::move(dir)), scenario_(scenario.name), policy_(std::move(policy)), seed_(seed),
      max_schedules_(max_schedules) {
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
        if (entry.is_regular_file(ec) && name.starts_with("request-") && name.ends_with(".json"))
            remove_stale(entry.path().string());
    }
}

void ScheduleExporter::remember(const std::shared_ptr<const model::RequestSpec>& spec) { specs_[spec->uid] = spec; }

namespace {

// How many fault notes one content or the global list keeps: the latest ones matter to a resume.
constexpr std::size_t kFaultNotesKept = 8;

}  // namespace

void ScheduleExporter::note_fault(const model::World& w, const model::Step& step, model::FaultClass fault,
                                  const std::string& what, std::uint64_t step_number) {
    FaultNote note{step_number, std::string(model::fault_name(fault)) + " " + what};
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
        segment == model::kNone
            ? global_faults_
            : faults_[{w.segments[segment].group, w.segments[segment].is_tail, w.segments[segment].key}];
    if (notes.size() == kFaultNotesKept) notes.erase(notes.begin());
    notes.push_back(std::move(note));
}

void ScheduleExporter::note_loaded(std::uint32_t segment, std::uint32_t epoch) { loaded_.insert({segment, epoch}); }

void ScheduleExporter::note_torn(std::uint32_t segment, std::uint32_t epoch) { torn_.insert({segment, epoch}); }

namespace {

std::vector<int> tokens_of(const model::RequestSpec& spec, std::uint32_t end) {
    std::vector<int> out(end);
    for (std::uint32_t p = 0; p < end; ++p) out[p] = token_at(spec, p);
    return out;
}

}  // namespace

void ScheduleExporter::export_read(const model::World& w, std::uint32_t r, const std::vector<model::ReadFact>& facts,
                                   const std::vector<model::Violation>& violations) {
    if (written_ >= max_schedules_) return;
    const model::Request& q = w.requests[r];
    const model::RequestSpec& spec = *q.spec;
    replay::Schedule out;
    out.tokens = tokens_of(spec, spec.input_tokens);
    std::vector<FaultNote> touched;  // faults that touched a read's content
    bool stale_config = false;       // a read was written under other weights or another layout
    for (const model::ReadFact& f : facts) {
        const model::PlanEntry& e = f.entry;
        replay::Read read;
        read.group = e.group;
        read.form = e.form;
        read.start = static_cast<int>(e.start);
        read.end = static_cast<int>(e.end);
        if (f.present && e.slot != model::kNone) {
            const model::Slot& slot = w.slots[e.slot];
            const std::uint32_t writer =
                slot.owner != model::kNone ? slot.owner : (f.epoch_ok ? e.segment : model::kNone);
            if (f.expected == f.actual) {
                read.source = replay::Source{out.tokens,
                                             true,
                                             e.form == model::Form::linear_state ? 0 : static_cast<int>(e.start),
                                             static_cast<int>(e.end),
                                             w.kv_version,
                                             w.current_layout(e.group),
                                             w.kv_version};
            } else if (writer != model::kNone && specs_.count(w.owner_uid(w.segments[writer])) != 0) {
                const model::Segment& ws = w.segments[writer];
                const model::RequestSpec& by = *specs_.at(w.owner_uid(ws));
                const bool linear = ws.form == model::Form::linear_state;
                // What the slot holds where the read looks: the read's part of an extent, or the
                // whole entry when the read is not inside it.
                const bool inside = !linear && w.start_of(ws) <= e.start && e.end <= ws.end;
                const std::uint32_t start = inside ? e.start : w.start_of(ws);
                const std::uint32_t end = linear ? w.anchor_of(ws) : inside ? e.end : ws.end;
                std::uint64_t index_version = ws.kv_version;
                if (ws.form == model::Form::indexer_state) {
                    const auto kv_group = static_cast<std::uint8_t>(w.group(ws.group).indexed_group);
                    const std::uint32_t kv =
                        model::covering_entry(w, by, kv_group, start + w.group(ws.group).block_tokens);
                    if (kv == model::kNone || w.segments[kv].data_version() != ws.indexed_version())
                        index_version += 1000;
                }
                read.source = replay::Source{tokens_of(by, end),    false,         static_cast<int>(start),
                                             static_cast<int>(end), ws.kv_version, ws.layout_id,
                                             index_version};
                if (slot.content == 0)
                    read.damage = replay::Damage::unwritten;
                else if (!ws.whole)
                    read.damage =
                        ws.stage == model::Stage::evicting ? replay::Damage::lost_half : replay::Damage::lost_block;
                else if (!f.aligned)
                    read.damage = replay::Damage::misaligned;
                else if (torn_.count({writer, ws.epoch}) != 0)
                    read.damage = replay::Damage::torn;
            }
            if (f.present && loaded_.count({e.segment, e.epoch}) != 0)
                read.transport = {replay::Transport::offload, replay::Transport::load};
        }
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
        stale_config =
            stale_config || (read.source && (read.source->weights_version != w.kv_version ||
                                             read.source->layout != static_cast<int>(w.current_layout(e.group))));
        out.reads.push_back(std::move(read));
    }
    if (stale_config) touched.insert(touched.end(), global_faults_.begin(), global_faults_.end());
    std::sort(touched.begin(), touched.end(), [](const FaultNote& a, const FaultNote& b) { return a.step < b.step; });
    touched.erase(
        std::unique(touched.begin(), touched.end(),
                    [](const FaultNote& a, const FaultNote& b) { return a.step == b.step && a.what == b.what; }),
        touched.end());
    for (const FaultNote& note : touched) {
        out.faults.push_back(note.what);
        out.events.push_back({note.step, note.what});
    }
    for (std::uint8_t g = 0; g < w.config->groups.size(); ++g) {
        out.groups.push_back(w.group(g));
        out.layouts.push_back(static_cast<int>(w.current_layout(g)));
    }
    for (const model::Violation& v : violations) {
        if (std::find(out.oracle_invariants.begin(), out.oracle_invariants.end(), v.invariant) ==
            out.oracle_invariants.end())
            out.oracle_invariants.push_back(v.invariant);
        out.oracle_corrupt = out.oracle_corrupt || model::corrupts_output(v.invariant);
    }
    out.scenario = scenario_;
    out.policy = policy_;
    out.seed = seed_;
    out.request = spec.uid;
    out.preset = w.config->name;
    out.weights_version = w.kv_version;
    out.resume_len = static_cast<int>(q.resume_len);
    out.prefill_chunk_tokens = static_cast<int>(w.derived.lcm_tokens);
    out.decode_steps = static_cast<int>(std::min<std::uint32_t>(spec.output_tokens, 4));
    char name[64];
    std::snprintf(name, sizeof name, "/request-%08u.json", spec.uid);
    files_.push_back(dir_ + name);
    write_file_atomic(files_.back(), replay::schedule_to_json(out).dump(1) + "\n");
    ++written_;
}

}  // namespace kvcheck::sim
