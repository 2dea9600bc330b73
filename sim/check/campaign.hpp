// A fuzz campaign as `kvcheck fuzz` and `kvcheck merge` run it: the shard, a resumed fuzz.json
// (its violations walked again, its budget continued), the walks, and fuzz.json with the first
// counterexample written to --out; and the deterministic merge of shards' results.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/walker.hpp"
#include "sim/io/input_error.hpp"

namespace kvcheck::sim {

struct CampaignRequest {
    FuzzOptions options;
    std::string shard = "0/1";  // i/n
    std::string out;
    std::string resume;  // an interrupted campaign's fuzz.json
    bool keep_going = false;
    bool no_swarm = false;
    // Whether the user gave a flag ("--walks"): a resumed campaign refuses one that asks another.
    std::function<bool(const char*)> given = [](const char*) { return false; };
    std::function<void(const FuzzOptions&, const std::string& shard)> started;  // the campaign, settled
};

struct CampaignOutcome {
    FuzzOptions options;  // as run (a resumed campaign's)
    std::string shard;
    FuzzReport report;                      // this run's walks
    nlohmann::json result;                  // fuzz.json: this run's and the carried violations
    std::uint64_t walks = 0;                // of the whole campaign
    std::optional<FoundViolation> first;    // the campaign's first violation, walked here or again
    std::string reproduce;                  // the fuzz command that finds `first` again
    std::optional<InputError> write_error;  // --out could not be written; the findings above still hold
};

CampaignOutcome run_campaign(CampaignRequest request);

// The fuzz command that walks a campaign's shard up to walk `walk` (a global walk index), from
// the campaign's fuzz.json (or merged) fields: the violation found there comes out again.
std::string fuzz_reproduce(const nlohmann::json& campaign, std::uint64_t walk);

// Reads, checks and merges shards' fuzz.json files (InputError naming the bad one).
nlohmann::json merge_fuzz_files(const std::vector<std::string>& files, std::vector<FuzzResultFile>& shards);

}  // namespace kvcheck::sim
