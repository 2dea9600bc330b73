// Replay executor: for one schedule, the from-scratch reference and the resumed run on one
// backend, compared bit for bit; on a difference, the group (layer), form and position where it
// starts; and a summary over many schedules with agreement against the simulator's oracle.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda_replay/backend.hpp"
#include "sim/format/schedule.hpp"

namespace kvcheck::replay {

struct Divergence {
    std::string schedule;  // file the schedule came from
    std::int64_t request = 0;
    int group = -1;  // the lowest layer whose output differs first
    std::string group_name;
    std::string form;   // the form whose assembled bytes differ in that group, or "compute"
    int position = -1;  // first token position whose output differs
    bool oracle_corrupt = false;
};

enum class Agreement { agree, false_alarm, miss };
std::string_view agreement_name(Agreement agreement);

// One run's outputs: logits of the prompt's last position and of every decode step, the greedy
// tokens, and each computed position's per-layer outputs ([position - first][layer][kModel]).
struct RunOutputs {
    std::vector<std::vector<float>> logits;
    std::vector<int> tokens;
    std::vector<float> hidden;
    int first = 0;
    int recaptures = 0;
};

struct ScheduleResult {
    std::string schedule;
    std::int64_t request = 0;
    bool bit_exact = false;
    std::optional<Divergence> divergence;
    bool oracle_corrupt = false;
    Agreement agreement = Agreement::agree;
    int recaptures = 0;                // decode graphs recaptured after a replayed migration (CUDA only)
    std::uint64_t reference_hash = 0;  // over the reference's logit bits and tokens
    std::uint64_t resumed_hash = 0;
    RunOutputs reference;
};

// Greedy choice: the highest logit, the lowest token id among equals.
int argmax_token(const std::vector<float>& logits);

ScheduleResult replay_schedule(const Schedule& schedule, const Backend& backend);

struct Summary {
    int schedules = 0;
    int bit_exact = 0;
    int diverged = 0;
    std::vector<Divergence> divergences;
    int agree = 0;
    int false_alarm = 0;
    int miss = 0;
    int recaptures = 0;
    std::vector<ScheduleResult> results;

    bool oracle_agrees() const { return false_alarm == 0 && miss == 0; }
};

Summary summarize(std::vector<ScheduleResult> results);
// The `kvcheck replay --json` object (docs/replay.md).
nlohmann::json summary_json(const Summary& summary, std::string_view backend);

}  // namespace kvcheck::replay
