// Replay schedules (docs/schedule-format.md): for each request that resumed from cache, what its
// reads really held — whose tokens, which weights and layout, what damage, whether the bytes went
// through host/disk — so cuda_replay can rebuild the bytes and confirm or refute the oracle.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/invariants.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvcheck::sim {

// Removes the request-*.json schedules an earlier export left in `dir` (other files stay), so that
// the folder's schedules are one run's: an export calls it before writing.
void remove_schedules(const std::string& dir);

class ScheduleExporter {
public:
    ScheduleExporter(std::string dir, const Scenario& scenario, std::string policy, std::uint64_t seed,
                     std::uint32_t max_schedules = 200);
    // Schedules of a run that never finished (a trace line found broken halfway, say) are
    // removed: an export is one whole run's or nothing.
    ~ScheduleExporter();
    ScheduleExporter(const ScheduleExporter&) = delete;
    ScheduleExporter& operator=(const ScheduleExporter&) = delete;
    // The run ended: its schedules stay.
    void finish() { finished_ = true; }

    void remember(const std::shared_ptr<const model::RequestSpec>& spec);
    // A fault just applied: `step` is the n-th model step of the run (from 1). It is kept for the
    // content it touched, so a later schedule that reads that content lists it.
    void note_fault(const model::World& world, const model::Step& step, model::FaultClass fault,
                    const std::string& what, std::uint64_t step_number);
    void note_loaded(std::uint32_t segment, std::uint32_t epoch);
    // A load that delivered only part of the segment and was taken as complete (F2 partial).
    void note_torn(std::uint32_t segment, std::uint32_t epoch);
    // A read that resumed from cache: its facts and violations as the driver found them.
    void export_read(const model::World& world, std::uint32_t request, const std::vector<model::ReadFact>& facts,
                     const std::vector<model::Violation>& violations);
    std::uint64_t written() const { return written_; }

private:
    std::string dir_;
    std::string scenario_;
    std::string policy_;
    std::uint64_t seed_;
    std::uint32_t max_schedules_;
    std::uint64_t written_ = 0;
    std::vector<std::string> files_;  // the schedules written, removed unless finish() is called
    bool finished_ = false;
    std::map<std::uint32_t, std::shared_ptr<const model::RequestSpec>> specs_;  // writers by uid
    std::set<std::pair<std::uint32_t, std::uint32_t>> loaded_;                  // (segment, epoch) after a load
    std::set<std::pair<std::uint32_t, std::uint32_t>> torn_;                    // (segment, epoch) after a torn load
    struct FaultNote {
        std::uint64_t step = 0;
        std::string what;
    };
    // Faults by the entry content they touched, (group, tail block?, content key); weight and
    // layout changes touch everything and are kept apart (the last few).
    std::map<std::tuple<std::uint8_t, bool, std::uint64_t>, std::vector<FaultNote>> faults_;
    std::vector<FaultNote> global_faults_;
};

// Token ids of a prompt as the replay sees them: derived from the content keys, so equal
// prefixes give equal tokens.
int token_at(const model::RequestSpec& spec, std::uint32_t position);

}  // namespace kvcheck::sim
