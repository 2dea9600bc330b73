#include "sim/check/campaign.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <regex>

#include "model/policy.hpp"
#include "model/preset.hpp"
#include "sim/check/check_run.hpp"
#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_fields.hpp"
#include "sim/io/shell_word.hpp"
#include "sim/io/suggest.hpp"

namespace kvcheck::sim {

namespace {

void parse_shard(const std::string& shard, FuzzOptions& o) {
    // i/n exactly: two decimal numbers and one slash, nothing else.
    static const std::regex kShard("([0-9]+)/([0-9]+)");
    std::smatch parts;
    const auto number = [](const std::string& digits, std::uint32_t& value) {
        return std::from_chars(digits.data(), digits.data() + digits.size(), value).ec == std::errc();
    };
    if (!std::regex_match(shard, parts, kShard) || !number(parts[1], o.shard_index) || !number(parts[2], o.shard_count))
        throw InputError("", "--shard", "expected i/n such as 0/4, got \"" + shard + "\"");
    if (o.shard_count == 0 || o.shard_index >= o.shard_count)
        throw InputError("", "--shard", "expected 0 <= i < n, got \"" + shard + "\"");
}

std::string shard_name(const FuzzOptions& f) {
    return std::to_string(f.shard_index) + "/" + std::to_string(f.shard_count);
}

// A resume whose time budget is spent still runs (walking nothing): a positive budget this small
// stops it before its first walk, where 0 would mean no time bound at all.
constexpr double kNoTimeLeft = 1e-9;

struct Carried {
    nlohmann::json violations = nlohmann::json::array();
    std::uint64_t walks = 0;
    std::uint64_t steps = 0;
    double seconds = 0;                   // spent by the campaign's earlier runs
    double seconds_budget = 0;            // the campaign's time budget (0: none recorded)
    std::optional<FoundViolation> first;  // the lowest carried violation, walked again
};

// A resumed run continues the file's campaign; a flag that asks for another is an input error.
Carried resume_campaign(CampaignRequest& a) {
    FuzzOptions& o = a.options;
    // The continued campaign is written to --out (the continue line names it), never only printed.
    if (a.out.empty())
        throw InputError(a.resume, "--resume",
                         "needs --out DIR for the continued campaign's fuzz.json (DIR may be this file's folder)");
    const nlohmann::json previous = parse_json_text(read_file(a.resume), a.resume);
    check_fuzz_json(previous, a.resume);
    const FuzzOptions given = o;
    Carried c;
    c.violations = resume_point(previous, o);
    const auto same = [&](const char* flag, const std::string& asked, const std::string& saved) {
        if (a.given(flag) && asked != saved)
            throw InputError(a.resume, flag,
                             "the fuzz.json is for " + std::string(flag) + " " + saved + ", not " + asked);
    };
    same("--policy", given.policy, o.policy);
    same("--model", given.model, o.model);
    same("--seed", std::to_string(given.seed), std::to_string(o.seed));
    same("--shard", shard_name(given), shard_name(o));
    same("--walks", std::to_string(given.walks), std::to_string(o.walks));
    same("--depth", std::to_string(given.depth), std::to_string(o.depth));
    if (a.no_swarm && o.swarm)
        throw InputError(a.resume, "--no-swarm", "the fuzz.json is for swarm walks (without --no-swarm)");
    if (a.keep_going && o.stop_at_first)
        throw InputError(a.resume, "--keep-going", "the fuzz.json stops at the first violation (without --keep-going)");
    a.shard = shard_name(o);
    c.walks = previous.at("walks").get<std::uint64_t>();
    c.steps = previous.at("steps").get<std::uint64_t>();
    // A time budget is the campaign's, not each run's: a resume gets what the earlier runs left of
    // it (of a --seconds given again, the new total).
    if (previous.contains("seconds_budget")) {
        c.seconds = previous.at("seconds_spent").get<double>();
        c.seconds_budget = a.given("--seconds") ? given.seconds : previous.at("seconds_budget").get<double>();
        o.seconds = std::max(c.seconds_budget - c.seconds, kNoTimeLeft);
        if (!a.given("--walks") && previous.at("walk_budget").get<std::uint64_t>() == 0) o.walks = 0;
    }
    if (o.walks == 0 && o.seconds <= 0)  // before any walk
        throw InputError(
            a.resume, "--seconds",
            "the fuzz.json is of a campaign bounded by time alone (walk_budget 0): give its --seconds again");
    c.first = rewalk_carried(c.violations, o, a.resume);
    return c;
}

}  // namespace

CampaignOutcome run_campaign(CampaignRequest a) {
    FuzzOptions& o = a.options;
    policy_named(o.policy);
    if (model::find_preset(o.model) == nullptr) throw InputError("", "--model", unknown_preset(o.model));
    if (a.no_swarm && o.model != "toy")
        throw InputError("", "--no-swarm", "walks the toy reference scope; --model " + o.model + " needs swarm walks");
    parse_shard(a.shard, o);
    if (!a.out.empty()) {
        require_output_folder(a.out);
        for (const char* name : {"/fuzz.json", "/counterexample.json", "/counterexample.dot"})
            require_output_file(a.out + name);
    }
    std::optional<OutputLock> lock;
    if (!a.out.empty()) lock.emplace(a.out);
    o.stop_at_first = !a.keep_going;
    o.swarm = !a.no_swarm;
    if (a.given("--seconds") && o.seconds > 0 && !a.given("--walks")) o.walks = 0;  // a time-bounded campaign
    Carried carried;
    if (!a.resume.empty()) carried = resume_campaign(a);
    if (o.walks == 0 && o.seconds <= 0) throw InputError("", "--walks", "give a budget: --walks N or --seconds S");
    if (a.started) a.started(o, a.shard);
    // fuzz.json of the whole campaign: the carried walks and violations with this run's.
    const auto campaign_json = [&](const FuzzReport& r) {
        nlohmann::json j = fuzz_json(r);
        for (const nlohmann::json& v : carried.violations) j["violations"].push_back(v);
        std::sort(j["violations"].begin(), j["violations"].end(),
                  [](const nlohmann::json& x, const nlohmann::json& y) { return x["walk"] < y["walk"]; });
        // Stopping at the first violation keeps one: a walk below the carried one may have found another.
        if (o.stop_at_first && j["violations"].size() > 1)
            j["violations"].erase(j["violations"].begin() + 1, j["violations"].end());
        j["walks"] = r.walks + carried.walks;
        j["steps"] = r.steps + carried.steps;
        if (o.seconds > 0) {  // only a time-bounded campaign: a walk-bounded fuzz.json stays byte-identical
            j["seconds_spent"] = carried.seconds + r.seconds;
            j["seconds_budget"] = carried.seconds_budget > 0 ? carried.seconds_budget : o.seconds;
        }
        return j;
    };
    if (!a.out.empty() && o.checkpoint_seconds > 0)
        o.checkpoint = [&](const FuzzReport& snapshot) {
            // A checkpoint that cannot be written (a full disk) is skipped: the campaign goes on,
            // and the final write reports the error after the findings are printed.
            try {
                ensure_directory(a.out);
                write_file_atomic(a.out + "/fuzz.json", campaign_json(snapshot).dump(2) + "\n");
            } catch (const InputError&) {}
        };
    CampaignOutcome out;
    out.report = fuzz(o);
    o.checkpoint = nullptr;
    const FuzzReport& r = out.report;
    nlohmann::json j = campaign_json(r);
    out.walks = j["walks"].get<std::uint64_t>();
    // The counterexample and the reproduce line are for the first violation of the whole campaign.
    if (!j["violations"].empty()) {
        const std::uint64_t walk = j["violations"].front().at("walk").get<std::uint64_t>();
        out.first = !r.violations.empty() && r.violations.front().walk == walk ? r.violations.front() : *carried.first;
        out.reproduce = fuzz_reproduce(j, out.first->walk);
    }
    // A write that fails (a full disk) must not hide what the walks found: the error is kept for
    // the caller to report after the findings.
    if (!a.out.empty()) {
        try {
            ensure_directory(a.out);
            write_file_atomic(a.out + "/fuzz.json", j.dump(2) + "\n");
            if (out.first)
                write_counterexample_files(a.out, out.first->scope, o.policy, out.first->counterexample);
            else
                remove_counterexample_files(a.out);
        } catch (const InputError& e) {
            out.write_error = e;
        }
    }
    out.result = std::move(j);
    out.shard = a.shard;
    out.options = o;
    return out;
}

std::string fuzz_reproduce(const nlohmann::json& campaign, std::uint64_t walk) {
    const std::string model = campaign.at("model").get<std::string>();
    const std::uint64_t shards = campaign.contains("shard") ? campaign.at("shard").at(1).get<std::uint64_t>()
                                                            : campaign.at("shards").at(0).at(1).get<std::uint64_t>();
    return kvcheck_command() + " fuzz --policy " + shell_word(campaign.at("policy").get<std::string>()) +
           (model == "toy" ? "" : " --model " + model) + " --seed " +
           std::to_string(campaign.at("seed").get<std::uint64_t>()) + " --walks " + std::to_string(walk / shards + 1) +
           " --shard " + std::to_string(walk % shards) + "/" + std::to_string(shards) + " --depth " +
           std::to_string(campaign.at("depth").get<std::uint64_t>()) +
           (campaign.at("swarm").get<bool>() ? "" : " --no-swarm");
}

nlohmann::json merge_fuzz_files(const std::vector<std::string>& files, std::vector<FuzzResultFile>& shards) {
    for (const std::string& f : files) {
        nlohmann::json j = parse_json_text(read_file(f), f);
        check_fuzz_json(j, f);
        shards.push_back({f, std::move(j)});
    }
    return merge_fuzz_json(shards);
}

}  // namespace kvcheck::sim
