// Chrome trace event writer.
#include "sim/timeline.hpp"

namespace kvcheck::sim {

namespace {
double us(std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; }
}  // namespace

void Timeline::span(std::uint32_t uid, const char* name, std::uint64_t start_ns, std::uint64_t end_ns, const std::string& detail) {
    if (!tracks(uid)) return;
    events_.push_back({name, detail, start_ns, end_ns - start_ns, uid, true});
}

void Timeline::instant(const std::string& name, std::uint64_t at_ns, const std::string& detail) {
    if (instants_ >= kMaxInstants) return;
    ++instants_;
    events_.push_back({name, detail, at_ns, 0, 0, false});
}

void Timeline::memory(std::uint64_t at_ns, const model::World& w) {
    // At most one sample per simulated millisecond, and a bounded number overall.
    if (memory_samples_.size() >= kMaxSamples || (!memory_samples_.empty() && at_ns < last_sample_ns_ + 1'000'000)) return;
    last_sample_ns_ = at_ns;
    const std::uint64_t state_table_bytes = std::uint64_t{w.live_segments} * model::kStateEntryBytes;
    memory_samples_.push_back({events_.size(), at_ns, w.bytes_by_form, state_table_bytes});
}

nlohmann::json Timeline::to_json() const {
    nlohmann::json meta = {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "kvcheck"}}}};
    nlohmann::json all = nlohmann::json::array();
    all.push_back(meta);
    auto sample = memory_samples_.begin();
    const auto samples_before = [&](std::size_t position) {
        for (; sample != memory_samples_.end() && sample->position <= position; ++sample) {
            nlohmann::json args = nlohmann::json::object();
            for (model::Form f : model::kAllForms) args[std::string(model::form_name(f))] = sample->bytes_by_form[static_cast<int>(f)];
            args["state_table"] = sample->state_table_bytes;
            all.push_back({{"name", "memory_bytes"}, {"ph", "C"}, {"pid", 1}, {"ts", us(sample->at_ns)}, {"args", args}});
        }
    };
    for (std::size_t i = 0; i < events_.size(); ++i) {
        samples_before(i);
        const Event& e = events_[i];
        if (!e.span) {
            all.push_back({{"name", e.name}, {"ph", "i"}, {"s", "g"}, {"pid", 1}, {"tid", 0}, {"ts", us(e.at_ns)},
                           {"args", {{"detail", e.detail}}}});
            continue;
        }
        nlohmann::json span = {{"name", e.name}, {"ph", "X"}, {"pid", 1}, {"tid", e.uid}, {"ts", us(e.at_ns)},
                               {"dur", us(e.duration_ns)}};
        if (!e.detail.empty()) span["args"] = {{"detail", e.detail}};
        all.push_back(std::move(span));
    }
    samples_before(events_.size());
    return {{"traceEvents", all}, {"displayTimeUnit", "ms"}};
}

}  // namespace kvcheck::sim
