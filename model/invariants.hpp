// Executable invariants, named after the design: red lines RL1-RL4, validation layers VL1-VL4,
// per-form resumability FM1-FM5, the oracle OR1, the rollout scope RO1 and the structural
// state-table checks ST1-ST2.
// Each is a predicate over the World and the step just taken that explains any violation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/scratch.hpp"
#include "model/steps.hpp"

namespace kvcheck::model {

struct Violation {
    Violation() = default;
    Violation(std::string name, std::string text, std::optional<PlanEntry> where = std::nullopt, std::string what = {})
        : invariant(std::move(name)), message(std::move(text)), entry(where), detail(std::move(what)) {}

    std::string invariant;  // e.g. "RL3_toctou"
    std::string message;    // a sentence a person can act on
    // A read-time violation of one entry of the plan, or of one range a group must hold to
    // resume (segment kNone): that entry, and what is wrong with it, the message without the
    // request and entry it starts with (a resume length off the grain has the detail alone).
    // Unset and empty for the checks after other steps.
    std::optional<PlanEntry> entry;
    std::string detail;
};

// What one planned read actually touches, judged against the ground truth rather than the policy.
struct ReadFact {
    PlanEntry entry;
    std::uint64_t expected = 0;  // ground-truth tag for what the reader believes it reads
    std::uint64_t actual = 0;    // tag of the bytes it really reads
    bool present = false;        // a segment is registered for the range
    bool epoch_ok = false;       // RL3: same segment, same epoch as at validation
    bool resident = false;       // FM5: on the GPU, in the slot the reader uses
    bool layout_ok = false;      // VL2
    bool aligned = false;        // VL4
    bool whole = false;          // FM1
    bool index_ok = true;        // FM4 (indexer entries)
};

// What each entry of a read's plan holds, against the ground truth; the second form reuses `out`.
std::vector<ReadFact> read_facts(const World& world, std::uint32_t request);
void read_facts_into(const World& world, std::uint32_t request, std::vector<ReadFact>& out);

// Why a read's content differs from the ground truth, in words (for corruption reports).
std::string mismatch_cause(const ReadFact& fact);

// The read-time invariants whose violation means the resumed output is wrong (silent corruption):
// content mismatch, a missing range, a half block, a misplaced tail.
bool corrupts_output(const std::string& invariant);

struct InvariantInfo {
    std::string_view name;
    std::string_view summary;
};
const std::vector<InvariantInfo>& invariant_catalogue();
// Whether `name` is in the catalogue, and the catalogue's names comma-separated (for error messages).
bool is_invariant(std::string_view name);
std::string invariant_names();

// Checks every invariant after a step produced `outcome`; appends violations to `out`. `facts`
// are read_facts of outcome.read_request when the step read (else ignored). `structural` adds
// the O(state) checks (RL2, ST1), which debug runs and explorers always enable. Drivers call it
// through model::Driver (model/driver.hpp), which keeps the facts and the scratch.
void check_invariants(const World& world, const StepOutcome& outcome, const std::vector<ReadFact>& facts,
                      bool structural, Scratch& scratch, std::vector<Violation>& out);

}  // namespace kvcheck::model
