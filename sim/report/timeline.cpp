// Chrome trace event writer.
#include "sim/report/timeline.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kvcheck::sim {

namespace {
double us(std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; }
}  // namespace

void Timeline::span(std::uint32_t uid, const char* name, std::uint64_t start_ns, std::uint64_t end_ns,
                    const std::string& detail, const std::string& verdict, const std::string& reason) {
    if (!tracks(uid)) {
        if (std::string_view(name) == "request") ++untracked_;  // its last span: one a request
        if (!request_cap_marked_) {
            request_cap_marked_ = true;
            events_.push_back({"timeline request cap reached",
                               "request " + std::to_string(uid) +
                                   " and every later one have no track: the timeline draws the first " +
                                   std::to_string(max_requests_) +
                                   " requests (limits.timeline_requests; report.json's timeline_untracked_requests "
                                   "counts the rest)",
                               "", "", start_ns, 0, 0, false});
        }
        return;
    }
    tracked_ = std::max(tracked_, uid + 1);
    events_.push_back({name, detail, verdict, reason, start_ns, end_ns - start_ns, uid, true});
}

void Timeline::instant(const std::string& name, std::uint64_t at_ns, const std::string& detail, bool capped) {
    if (capped && instants_ >= kMaxInstants) {
        if (dropped_instants_++ == 0) {
            cap_event_ = events_.size();
            events_.push_back({"timeline instant cap reached", "", "", "", at_ns, 0, 0, false});  // detail by write()
        }
        return;
    }
    if (capped) ++instants_;
    events_.push_back({name, detail, "", "", at_ns, 0, 0, false});
}

void Timeline::memory(std::uint64_t at_ns, const model::World& w) {
    if (!memory_samples_.empty() && at_ns < last_sample_ns_ + sample_spacing_ns_) return;
    if (memory_samples_.size() == kMaxSamples) {
        // Keep samples 0, 2, 4, ...: each kept one's position still precedes the same events.
        for (std::size_t i = 0; 2 * i < memory_samples_.size(); ++i) memory_samples_[i] = memory_samples_[2 * i];
        memory_samples_.resize((memory_samples_.size() + 1) / 2);
        sample_spacing_ns_ *= 2;
        if (at_ns < memory_samples_.back().at_ns + sample_spacing_ns_) {
            last_sample_ns_ = memory_samples_.back().at_ns;
            return;
        }
    }
    last_sample_ns_ = at_ns;
    const std::uint64_t state_table_bytes = std::uint64_t{w.live_segments} * model::kStateEntryBytes;
    memory_samples_.push_back({events_.size(), at_ns, w.bytes_by_form, state_table_bytes});
}

void Timeline::write(std::ostream& out) const {
    // The file is streamed event by event: holding all events as one JSON value cost as much as
    // the whole replay, and holding the text whole (6.7 MB for the conversation trace) cost half
    // of a run's page faults. Each event is still a JSON value written by nlohmann/json, and the
    // bytes are those of the value {"displayTimeUnit": "ms", "traceEvents": [...]} dumped whole.
    // Keys in sorted order, as nlohmann would dump the whole value.
    out << R"({"displayTimeUnit":"ms",)";
    if (!run_id_.empty()) out << R"("metadata":)" << nlohmann::json{{"run_id", run_id_}} << ',';
    out << R"("traceEvents":[)";
    bool first = true;
    const auto emit = [&out, &first](const nlohmann::json& event) {
        if (!first) out << ',';
        first = false;
        out << event;  // compact, as dump() writes it
    };
    emit({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "kvcheck"}}}});
    // Track 0 holds the instants; request uid's spans are on track uid + 1, named after it.
    emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "faults and violations"}}}});
    nlohmann::json thread = {{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", ""}}}};
    for (std::uint32_t uid = 0; uid < tracked_; ++uid) {
        thread["tid"] = uid + 1;
        thread["args"]["name"] = "request " + std::to_string(uid);
        emit(thread);
    }
    // One counter value, refilled for every sample: its keys are allocated once.
    nlohmann::json counter = {
        {"name", "memory_bytes"}, {"ph", "C"}, {"pid", 1}, {"ts", 0.0}, {"args", nlohmann::json::object()}};
    nlohmann::json& counter_ts = counter["ts"];
    nlohmann::json& counter_args = counter["args"];
    std::array<nlohmann::json*, model::kFormCount> form_bytes{};
    for (model::Form f : model::kAllForms)
        form_bytes[static_cast<int>(f)] = &counter_args[std::string(model::form_name(f))];
    nlohmann::json& state_table_bytes = counter_args["state_table"];
    auto sample = memory_samples_.begin();
    const auto samples_before = [&](std::size_t position) {
        for (; sample != memory_samples_.end() && sample->position <= position; ++sample) {
            counter_ts = us(sample->at_ns);
            for (int f = 0; f < model::kFormCount; ++f) *form_bytes[f] = sample->bytes_by_form[f];
            state_table_bytes = sample->state_table_bytes;
            emit(counter);
        }
    };
    for (std::size_t i = 0; i < events_.size(); ++i) {
        samples_before(i);
        const Event& e = events_[i];
        nlohmann::json event = nlohmann::json::object();
        event["name"] = e.name;
        event["pid"] = 1;
        event["ts"] = us(e.at_ns);
        if (e.span) {
            event["ph"] = "X";
            event["tid"] = e.uid + 1;
            event["dur"] = us(e.duration_ns);
            if (!e.detail.empty()) event["args"]["detail"] = e.detail;
            if (!e.verdict.empty()) event["args"]["verdict"] = e.verdict;
            if (!e.reason.empty()) event["args"]["reason"] = e.reason;
        } else {
            event["ph"] = "i";
            event["s"] = "g";
            event["tid"] = 0;
            event["args"]["detail"] = dropped_instants_ > 0 && i == cap_event_
                                          ? "this and " + std::to_string(dropped_instants_ - 1) +
                                                " later fault instants are not drawn: the timeline keeps the first " +
                                                std::to_string(kMaxInstants) +
                                                " (report.json's faults_injected counts every one)"
                                          : e.detail;
        }
        emit(event);
    }
    samples_before(events_.size());
    out << "]}\n";
}

std::string Timeline::dump() const {
    std::ostringstream out;
    write(out);
    return out.str();
}

}  // namespace kvcheck::sim
