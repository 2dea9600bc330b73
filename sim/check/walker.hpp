// `kvcheck fuzz`: seeded random walks and swarm testing (the configuration itself drawn from each
// walk's seed) over larger scopes. Walk i always uses the seed derived from (root seed, i), so
// threads and shards change only who runs a walk, never what it does.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/trail.hpp"

namespace kvcheck::sim {

inline constexpr std::uint32_t kFuzzDepthMax = 1'000'000;  // steps per walk

struct FuzzReport;

struct FuzzOptions {
    std::uint64_t seed = 1;
    std::uint64_t walks = 1000;  // budget in walks (0: unbounded, use seconds)
    double seconds = 0;          // budget in seconds (0: unbounded, use walks)
    std::uint32_t threads = 1;
    std::uint32_t shard_index = 0;  // this process runs walks with index % shard_count == shard_index
    std::uint32_t shard_count = 1;
    bool swarm = true;  // draw the scope per walk; otherwise walk `base`
    bool stop_at_first = true;
    std::string policy = "validated";
    std::string model = "toy";  // the preset swarm scopes are drawn for
    Scope base = named_scope("reference");
    std::uint32_t depth = 120;  // steps per walk
    std::function<void(std::uint64_t walks_done)> progress;
    const std::atomic<bool>* stop = nullptr;  // set (e.g. by Ctrl-C) to stop after the walks in flight
    std::uint64_t first_walk = 0;             // resume: walks [0, first_walk) of this shard are done
    // Resume under stop_at_first: a violation was found at this shard-local walk before, so it is
    // not walked again and no walk above it runs (~0: none).
    std::uint64_t known_violation = ~0ULL;
    // Called every `checkpoint_seconds` (when set) with the campaign so far as a resumable
    // report: the walks below its next_walk, their steps and violations, marked interrupted. A
    // killed campaign resumes from the last one to the end an uninterrupted run reaches.
    std::function<void(const FuzzReport&)> checkpoint;
    double checkpoint_seconds = 10;
};

struct FoundViolation {
    std::uint64_t walk = 0;         // global walk index
    Scope scope;                    // the walk's scope (swarm draws it)
    Counterexample counterexample;  // shrunk
    std::string invariant;          // the first invariant it violates
};

struct FuzzReport {
    std::string policy;
    std::string model = "toy";
    std::uint64_t seed = 0;
    std::uint32_t shard_index = 0;
    std::uint32_t shard_count = 1;
    std::uint64_t walks = 0;        // walks completed by this run
    std::uint64_t next_walk = 0;    // every walk of this shard below this (shard-local) number is done
    std::uint64_t walk_budget = 0;  // the campaign's options, recorded so that a resume continues the same one
    std::uint32_t depth = 0;
    bool swarm = true;
    bool keep_going = false;
    bool interrupted = false;
    std::uint64_t steps = 0;
    std::vector<FoundViolation> violations;  // sorted by walk index
    double seconds = 0;
};

FuzzReport fuzz(const FuzzOptions& options);

// The scope walk `index` explores under swarm testing, for the preset `model` (a name
// model::find_preset knows): its groups, prompts of 2-8 content blocks (16 tokens for toy; for a
// preset, the larger of its smallest block and half its LCM) and a GPU budget scaled by the
// preset's bytes per token, so that admission and eviction bite as they do for toy.
Scope swarm_scope(std::uint64_t root_seed, std::uint64_t index, const std::string& model = "toy");

// Walks global walk `index` of the campaign `options` describes again and shrinks its violation,
// as fuzz() did when it found it: for the counterexample of a violation carried over a resume.
// Empty when that walk violates nothing (the violation did not come from this campaign).
std::optional<FoundViolation> rewalk(const FuzzOptions& options, std::uint64_t index);
// Walks every violation a resumed fuzz.json (`file`) carries again: each must come out exactly as
// written, or InputError names its JSON pointer (a damaged or edited file is refused, not
// continued). Returns the lowest one, for the campaign's counterexample; empty when none.
std::optional<FoundViolation> rewalk_carried(const nlohmann::json& violations, const FuzzOptions& options,
                                             const std::string& file);

nlohmann::json fuzz_json(const FuzzReport& report);
// One entry of fuzz.json's "violations": the walk, the invariant, the shrunk steps described and
// as a steps-mode scenario.
nlohmann::json violation_json(const FoundViolation& violation, const std::string& policy);
// Checks a fuzz.json of one shard, read from `file`, before it is resumed or merged: throws
// InputError naming the file and the JSON pointer of the first field that is missing or wrong.
void check_fuzz_json(const nlohmann::json& result, const std::string& file);
// Reads a checked fuzz.json written by an interrupted (or finished) run, to continue it with
// --resume: sets the campaign's options (policy, seed, shard, depth, swarm, keep-going, walk
// budget), first_walk from its next_walk and, stopping at the first violation, known_violation;
// returns the violations found so far (as JSON).
nlohmann::json resume_point(const nlohmann::json& previous, FuzzOptions& options);
// One shard's checked fuzz.json and the file it came from.
struct FuzzResultFile {
    std::string path;
    nlohmann::json result;
};
// Merges shard results deterministically: walks and steps add up, violations are ordered by walk.
// Throws InputError naming the file when a shard comes from another campaign (policy, seed,
// depth, swarm, keep-going or shard count) or was merged already, and naming the violation's
// JSON pointer when one does not come out as written when walked again (rewalk_carried).
nlohmann::json merge_fuzz_json(const std::vector<FuzzResultFile>& shards);

}  // namespace kvcheck::sim
