// The token figures of a run and its warnings (docs/metrics.md): prompt tokens as the denominator
// of the token rates, reused tokens split by the tier they came from, recomputed tokens the resume
// grain trimmed, the run-wide warnings that prefix caching did nothing or little, and the entry
// ages (how long entries stay on the GPU, sit unread, and wait between reads).
#include <cstdio>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/cli_fixtures.hpp"

namespace {

nlohmann::json run_json(const fs::path& file, const std::string& policy) {
    const Outcome o = kvcheck({"run", file.string(), "--policy", policy, "--json", "--quiet"});
    EXPECT_TRUE(o.code == 0 || o.code == 1) << o.all();
    return nlohmann::json::parse(o.out);
}

// A scenario of explicit requests on the toy preset (16-token blocks, resume grain 32), written to
// the scratch folder.
fs::path toy_scenario(const std::string& name, const nlohmann::json& requests,
                      const nlohmann::json& extra = nlohmann::json::object()) {
    nlohmann::json doc = {{"name", name}, {"model", "toy"}, {"workload", {{"block_size", 16}, {"requests", requests}}}};
    doc.update(extra);
    const fs::path file = scratch(name) / "scenario.json";
    write_text(file, doc.dump(2));
    return file;
}

nlohmann::json request(int at_ms, int input_tokens, const std::vector<int>& blocks) {
    return {{"at_ms", at_ms}, {"input_tokens", input_tokens}, {"output_tokens", 4}, {"blocks", blocks}};
}

std::vector<std::string> codes(const nlohmann::json& report) {
    std::vector<std::string> out;
    for (const auto& w : report["warnings"]) out.push_back(w["code"].get<std::string>());
    return out;
}

std::uint64_t loaded(const nlohmann::json& r) {
    return r["reused_tokens_by_source"]["host"].get<std::uint64_t>() +
           r["reused_tokens_by_source"]["disk"].get<std::uint64_t>();
}

}  // namespace

// Proves: after a full run the prompt tokens are what was reused plus what was computed, the token
// rates are hit and reused tokens over them, the sources add up to the reused tokens, and trimmed
// tokens are part of the recomputed ones. naive never waits for a load, so all it reuses was on
// the GPU; validated waits (io_wait verdicts) and reads tokens loaded back from host and disk.
TEST(TokenFigures, DenominatorsAndSourcesAddUp) {
    const fs::path quickstart = kSourceDir / "scenarios" / "quickstart.json";
    for (const std::string policy : {"naive", "validated"}) {
        SCOPED_TRACE(policy);
        const nlohmann::json r = run_json(quickstart, policy);
        const auto n = [&](const char* key) { return r[key].get<std::uint64_t>(); };
        EXPECT_EQ(n("prompt_tokens"), n("reused_tokens") + n("computed_tokens"));
        EXPECT_DOUBLE_EQ(r["token_hit_rate"].get<double>(),
                         static_cast<double>(n("hit_tokens")) / static_cast<double>(n("prompt_tokens")));
        EXPECT_DOUBLE_EQ(r["token_reuse_rate"].get<double>(),
                         static_cast<double>(n("reused_tokens")) / static_cast<double>(n("prompt_tokens")));
        std::uint64_t sources = 0;
        for (const auto& [source, tokens] : r["reused_tokens_by_source"].items())
            sources += tokens.get<std::uint64_t>();
        EXPECT_EQ(r["reused_tokens_by_source"].size(), 3u);
        EXPECT_EQ(sources, n("reused_tokens"));
        EXPECT_LE(n("trimmed_tokens"), n("recomputed_tokens"));
        EXPECT_EQ(n("resume_grain_tokens"), 256u);  // deepseek-v4: the LCM, and the primary group's (c4's) block
        EXPECT_TRUE(r["warnings"].empty()) << r["warnings"].dump();
        if (policy == "naive") {
            EXPECT_EQ(r["verdicts"]["io_wait"], 0);
            EXPECT_EQ(loaded(r), 0u);
        } else {
            EXPECT_GT(r["verdicts"]["io_wait"].get<int>(), 0);
            EXPECT_GT(r["reused_tokens_by_source"]["host"].get<std::uint64_t>(), 0u);
            EXPECT_GT(r["reused_tokens_by_source"]["disk"].get<std::uint64_t>(), 0u);
        }
    }
}

// Proves: a loaded token counts under the tier its load ran on. With a host tier large enough for
// every offloaded byte every load runs from host memory; with a host tier of one byte, from disk.
TEST(TokenFigures, LoadedTokensCountUnderTheTierTheyCameFrom) {
    const fs::path quickstart = kSourceDir / "scenarios" / "quickstart.json";
    nlohmann::json doc = nlohmann::json::parse(read_text(quickstart));
    doc["storage"]["host"]["capacity_bytes"] = 1ULL << 40;
    const nlohmann::json all_host = run_json(relocated_copy(quickstart, doc, "all-host"), "validated");
    EXPECT_GT(all_host["reused_tokens_by_source"]["host"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(all_host["reused_tokens_by_source"]["disk"], 0);
    doc["storage"]["host"]["capacity_bytes"] = 1;
    const nlohmann::json all_disk = run_json(relocated_copy(quickstart, doc, "all-disk"), "validated");
    EXPECT_EQ(all_disk["reused_tokens_by_source"]["host"], 0);
    EXPECT_GT(all_disk["reused_tokens_by_source"]["disk"].get<std::uint64_t>(), 0u);
}

// Proves: a hit shorter than the resume grain is trimmed to nothing. On the toy preset (16-token
// blocks, grain 32) a request sharing one block with an earlier one hits 16 tokens; validated
// trims all 16 and resumes nothing, so the hit is a post-hit fallback and the run warns
// `nothing_resumed` and names the grain; naive resumes the hit as it stands, trims nothing, falls
// back on nothing and raises no warning.
TEST(TokenFigures, TrimmedTokensAreTheGrainsCut) {
    const fs::path file = toy_scenario("trimmed", {request(0, 48, {1, 2, 3}), request(5000, 48, {1, 7, 8})});
    const nlohmann::json validated = run_json(file, "validated");
    EXPECT_EQ(validated["hit_tokens"], 16);
    EXPECT_EQ(validated["trimmed_tokens"], 16);
    EXPECT_EQ(validated["recomputed_tokens"], 16);
    EXPECT_EQ(validated["reused_tokens"], 0);
    EXPECT_EQ(validated["resume_grain_tokens"], 32);
    // The hit resumed nothing, so it fell back (though nothing under the grain was refused).
    EXPECT_EQ(validated["hits"], 1);
    EXPECT_EQ(validated["post_hit_fallbacks"], 1);
    EXPECT_DOUBLE_EQ(validated["post_hit_fallback_rate"].get<double>(), 1.0);
    ASSERT_EQ(codes(validated), std::vector<std::string>{"nothing_resumed"});
    const std::string message = validated["warnings"][0]["message"].get<std::string>();
    EXPECT_NE(message.find("16 of the 16 recomputed hit tokens were cut down to a multiple of the resume grain "
                           "(resume_grain_tokens 32)"),
              std::string::npos)
        << message;
    const nlohmann::json naive = run_json(file, "naive");
    EXPECT_EQ(naive["reused_tokens"], 16);
    EXPECT_EQ(naive["trimmed_tokens"], 0);
    EXPECT_EQ(naive["post_hit_fallbacks"], 0);
    EXPECT_TRUE(naive["warnings"].empty()) << naive["warnings"].dump();
}

// Proves: requests that share no block make a run that warns `no_hits`; the warning is printed
// on the terminal, kept in report.json, set in metrics.prom and given as the output of its JUnit
// case, and `--quiet` leaves it out of the terminal only. A single request warns of nothing.
TEST(Warnings, NoSharedPrefixWarnsNoHits) {
    const fs::path file = toy_scenario("no-hits", {request(0, 48, {1, 2, 3}), request(5000, 48, {4, 5, 6})});
    const fs::path out = scratch("no-hits-out");
    const Outcome o = kvcheck({"run", file.string(), "--out", out.string()});
    ASSERT_EQ(o.code, 0) << o.all();
    EXPECT_NE(o.out.find("\nwarning: prefix caching found nothing to reuse: none of the 2 requests began with a block "
                         "an earlier request "
                         "had cached (hit_rate 0)\n"),
              std::string::npos)
        << o.out;
    const nlohmann::json report = nlohmann::json::parse(read_text(out / "report.json"));
    EXPECT_EQ(codes(report), std::vector<std::string>{"no_hits"});
    const std::string prom = read_text(out / "metrics.prom");
    const std::string run = "scenario=\"" + report["scenario"].get<std::string>() + "\",policy=\"validated\",seed=\"" +
                            std::to_string(report["seed"].get<std::uint64_t>()) + "\"";
    EXPECT_NE(prom.find("\nkvcheck_warning{" + run + ",code=\"no_hits\"} 1\n"), std::string::npos) << prom;
    EXPECT_EQ(std::regex_search(prom, std::regex("\nkvcheck_warning\\{[^}]*code=\"(nothing_resumed|little_resumed)\"")),
              false);
    const Outcome quiet = kvcheck({"run", file.string(), "--quiet"});
    EXPECT_EQ(quiet.out.find("warning:"), std::string::npos) << quiet.out;
    // A suite's JUnit case carries the warning as its output, --quiet or not.
    const fs::path junit = out / "junit.xml";
    ASSERT_EQ(kvcheck({"run", file.parent_path().string(), "--quiet", "--junit", junit.string()}).code, 0);
    EXPECT_NE(read_text(junit).find("\nwarning: prefix caching found nothing to reuse: none of the 2 requests"),
              std::string::npos)
        << read_text(junit);
    const nlohmann::json one =
        run_json(toy_scenario("one", nlohmann::json::array({request(0, 48, {1, 2, 3})})), "validated");
    EXPECT_TRUE(one["warnings"].empty()) << one["warnings"].dump();
}

// Proves: when requests share a prefix but a GPU budget too small for any of them caches nothing,
// the `no_hits` warning says how many allocations did not fit, the reason no request hit.
TEST(Warnings, NoHitsNamesAdmissionRefusals) {
    const fs::path file = toy_scenario("no-room", {request(0, 48, {1, 2, 3}), request(5000, 48, {1, 2, 3})},
                                       {{"storage", {{"gpu_budget_bytes", 1}}}});
    const nlohmann::json r = run_json(file, "validated");
    ASSERT_EQ(codes(r), std::vector<std::string>{"no_hits"});
    ASSERT_GT(r["admission_refusals"].get<int>(), 0);
    EXPECT_NE(r["warnings"][0]["message"].get<std::string>().find("; admission_refusals is " +
                                                                  r["admission_refusals"].dump() +
                                                                  ": what did not fit the GPU budget was never cached"),
              std::string::npos)
        << r["warnings"].dump();
}

// Proves: hits that a rule forbids resuming make a run that warns `nothing_resumed` and names the
// miss reason that cut the most tokens: with rollout off, every hit is refused for `rollout`, which
// cuts the hit on the grain.
TEST(Warnings, HitsNeverResumedNameTheMissReason) {
    const fs::path file = toy_scenario("rollout-off", {request(0, 64, {1, 2, 3, 4}), request(5000, 64, {1, 2, 3, 4})},
                                       {{"rollout", "off"}});
    const nlohmann::json r = run_json(file, "validated");
    EXPECT_GT(r["hits"].get<int>(), 0);
    EXPECT_EQ(r["reused_tokens"], 0);
    ASSERT_EQ(codes(r), std::vector<std::string>{"nothing_resumed"});
    const std::string message = r["warnings"][0]["message"].get<std::string>();
    EXPECT_EQ(
        r["miss_tokens"],
        nlohmann::json::parse(R"({"compressed_kv": {"rollout": 32}})"));  // the 48-token hit on the 32-token grain
    EXPECT_EQ(message,
              "prefix caching resumed nothing: 1 request hit the cache for 48 tokens, and no token was read from it; "
              "the miss "
              "reason that cut the most tokens is compressed_kv.rollout (32 tokens at first lookups; see miss_tokens)");
}

// Proves: at a first lookup each group that cuts the usable length files the tokens it cut under
// its form and reason (miss_tokens), and the cuts and the resume add up to the hit. A second
// request sharing a 96-token prompt resumes it all; with an F8 expiry at its arrival its SWA
// window before 96 is dead, so it resumes 64 and swa_window.window_expired holds the 32 cut; with
// an F11 lost block the compressed segment is not whole and compressed_kv.partial_segment cuts all
// 96. naive never checks, so it never cuts. The quickstart's cuts come only from reasons it counted.
TEST(TokenFigures, MissTokensAccountForTheCut) {
    const nlohmann::json requests = {request(0, 96, {1, 2, 3, 4, 5, 6}), request(5000, 128, {1, 2, 3, 4, 5, 6, 7, 8})};
    const auto cut = [&](const std::string& name, const nlohmann::json& faults,
                         const std::string& policy = "validated") {
        const nlohmann::json r = run_json(toy_scenario(name, requests, {{"faults", faults}}), policy);
        EXPECT_EQ(r["hit_tokens"], 96);
        return r;
    };
    const nlohmann::json clean = cut("cut-none", nlohmann::json::array());
    EXPECT_EQ(clean["reused_tokens"], 96);
    EXPECT_TRUE(clean["miss_tokens"].empty());
    const nlohmann::json f8 = cut("cut-f8", {{{"fault", "F8"}, {"at_ms", 3000}}});
    EXPECT_EQ(f8["reused_tokens"], 64);
    EXPECT_EQ(f8["miss_tokens"], nlohmann::json::parse(R"({"swa_window": {"window_expired": 32}})"));
    const nlohmann::json f11 = cut("cut-f11", {{{"fault", "F11"}, {"at_ms", 3000}}});
    EXPECT_EQ(f11["reused_tokens"], 0);
    EXPECT_EQ(f11["miss_tokens"], nlohmann::json::parse(R"({"compressed_kv": {"partial_segment": 96}})"));
    EXPECT_TRUE(cut("cut-f11-naive", {{{"fault", "F11"}, {"at_ms", 3000}}}, "naive")["miss_tokens"].empty());
    const nlohmann::json quickstart = run_json(kSourceDir / "scenarios" / "quickstart.json", "validated");
    ASSERT_FALSE(quickstart["miss_tokens"].empty());
    for (const auto& [form, reasons] : quickstart["miss_tokens"].items())
        for (const auto& [reason, tokens] : reasons.items())
            EXPECT_TRUE(quickstart["miss_reasons"][form].contains(reason)) << form << "." << reason;
}

// Proves: a run that resumes under a tenth of its hit tokens warns `little_resumed` with the
// share: the interrupted-eviction scenario under validated (F1 leaves segments partial, so most
// hits fall back); report.html shows it as a badge. naive resumes every hit and raises nothing,
// and `compare` puts each policy's codes in its "warnings" row and the tokens each miss reason
// cut in its "miss tokens" rows.
TEST(Warnings, LittleResumedGivesTheShare) {
    const fs::path file = kSourceDir / "scenarios" / "fault-f1-interrupted-eviction.json";
    const nlohmann::json validated = run_json(file, "validated");
    ASSERT_EQ(codes(validated), std::vector<std::string>{"little_resumed"});
    const double share = validated["reused_tokens"].get<double>() / validated["hit_tokens"].get<double>();
    ASSERT_LT(share, 0.1);
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f", 100 * share);
    const std::string message = validated["warnings"][0]["message"].get<std::string>();
    EXPECT_EQ(message.rfind("prefix caching resumed " + std::string(pct) + " % of the " +
                                validated["hit_tokens"].dump() + " tokens",
                            0),
              0u)
        << message;
    EXPECT_TRUE(run_json(file, "naive")["warnings"].empty());
    const fs::path out = scratch("little-html");
    ASSERT_EQ(kvcheck({"run", file.string(), "--quiet", "--html", "--out", out.string()}).code, 0);
    EXPECT_NE(read_text(out / "report.html")
                  .find("<p class=\"badge warn\">prefix caching resumed " + std::string(pct) + " %"),
              std::string::npos);
    const Outcome cmp = kvcheck({"compare", file.string(), "--policies", "naive,validated"});
    EXPECT_TRUE(std::regex_search(cmp.out, std::regex("\nwarnings +- +little_resumed\n"))) << cmp.all();
    EXPECT_TRUE(std::regex_search(cmp.out, std::regex("\nreused tokens from gpu +[0-9]+ +[0-9]+\n"))) << cmp.out;
    const std::string partial = validated["miss_tokens"]["compressed_kv"]["partial_segment"].dump();
    EXPECT_TRUE(
        std::regex_search(cmp.out, std::regex("\nmiss tokens compressed_kv\\.partial_segment +0 +" + partial + "\n")))
        << cmp.out;
}

// Proves: the reuse gap runs from an entry's creation (or last read) to its next read. Request 0
// writes a prompt; request 1 reads it 2 s later and request 2 reads it again 3 s after that; every
// gap is at most those distances and most are about them. With a GPU budget that holds
// everything no entry leaves the GPU, so no lifetime or idle time is counted: an entry still on
// the GPU at the end of the run gives none.
TEST(EntryAges, ReuseGapsRunFromTheLastRead) {
    const std::vector<int> blocks{1, 2, 3, 4, 5, 6, 7, 8};
    const auto run = [&](const std::vector<int>& at_ms) {
        nlohmann::json requests = nlohmann::json::array();
        for (int at : at_ms) requests.push_back(request(at, 128, blocks));
        return run_json(toy_scenario("ages-" + std::to_string(at_ms.size()), requests), "validated");
    };
    const nlohmann::json two = run({0, 2000});
    const nlohmann::json three = run({0, 2000, 5000});
    const nlohmann::json& gap2 = two["entry_ages_ms"]["reuse_gap"]["all"];
    const nlohmann::json& gap3 = three["entry_ages_ms"]["reuse_gap"]["all"];
    ASSERT_GT(gap2["count"].get<int>(), 0);
    EXPECT_EQ(gap3["count"].get<int>(), 2 * gap2["count"].get<int>()) << "the third request reads what the second read";
    EXPECT_LE(gap2["max"].get<double>(), 2000.0);
    EXPECT_GT(gap2["p50"].get<double>(), 1500.0);
    EXPECT_LE(gap3["max"].get<double>(), 3000.0);
    EXPECT_GT(gap3["max"].get<double>(), 2500.0);
    for (const nlohmann::json* r : {&two, &three}) {
        const nlohmann::json& ages = (*r)["entry_ages_ms"];
        EXPECT_EQ(ages["lifetime"]["all"]["count"].get<int>(), 0);
        EXPECT_EQ(ages["idle_before_eviction"]["all"]["count"].get<int>(), 0);
        for (const auto& [form, life] : ages["lifetime"].items()) EXPECT_EQ(life["count"].get<int>(), 0) << form;
    }
}

// Proves: under a GPU budget that evicts (quickstart), every entry that leaves the GPU counts once
// in each of lifetime and idle time, by form, and the forms add up to "all"; there are at least as
// many departures as admission evictions and at most as many as evictions and offloads; idle
// time never exceeds lifetime; and metrics.prom gives each age as a Prometheus histogram per form whose buckets
// never fall, whose +Inf bucket is its count and whose count is report.json's.
TEST(EntryAges, EveryDepartureCountsOnceAndPrometheusAgrees) {
    const fs::path out = scratch("ages-quickstart");
    const Outcome o =
        kvcheck({"run", (kSourceDir / "scenarios" / "quickstart.json").string(), "--out", out.string(), "--quiet"});
    ASSERT_EQ(o.code, 0) << o.all();
    const nlohmann::json report = read_json(out / "report.json");
    const nlohmann::json& ages = report["entry_ages_ms"];
    std::uint64_t departures = 0;
    for (const char* age : {"lifetime", "idle_before_eviction", "reuse_gap"}) {
        SCOPED_TRACE(age);
        std::uint64_t sum = 0;
        for (const auto& [form, h] : ages[age].items())
            if (form != "all") sum += h["count"].get<std::uint64_t>();
        EXPECT_EQ(sum, ages[age]["all"]["count"].get<std::uint64_t>());
        EXPECT_GT(sum, 0u);
        if (std::string(age) == "lifetime") departures = sum;
    }
    EXPECT_EQ(ages["idle_before_eviction"]["all"]["count"].get<std::uint64_t>(), departures);
    EXPECT_LE(ages["idle_before_eviction"]["all"]["max"].get<double>(), ages["lifetime"]["all"]["max"].get<double>());
    // Every departure is an eviction from the GPU or an offload's release, and every admission
    // eviction takes an entry off the GPU.
    std::uint64_t gpu_evictions = 0;
    for (const auto& [cause, forms] : report["evictions_by_cause"].items())
        if (cause != "tier_full")
            for (const auto& [form, n] : forms.items()) gpu_evictions += n.get<std::uint64_t>();
    EXPECT_LE(departures, gpu_evictions + report["offloads"].get<std::uint64_t>());
    std::uint64_t admissions = 0;
    for (const auto& [form, n] : report["evictions_by_cause"]["admission"].items())
        admissions += n.get<std::uint64_t>();
    EXPECT_GT(admissions, 0u);
    EXPECT_GE(departures, admissions);

    const std::string prom = read_text(out / "metrics.prom");
    const std::regex line(
        R"re(kvcheck_entry_(\w+)_seconds_(bucket|count)\{scenario="[^"]*",policy="validated",seed="\d+",form="(\w+)"(?:,le="([^"]+)")?\} (\d+))re");
    std::map<std::string, std::uint64_t> last_bucket, count, inf;
    std::istringstream lines(prom);
    for (std::string l; std::getline(lines, l);) {
        std::smatch m;
        if (!std::regex_match(l, m, line)) continue;
        const std::string key = m[1].str() + "/" + m[3].str();
        const std::uint64_t n = std::stoull(m[5].str());
        if (m[2] == "count") {
            count[key] = n;
            continue;
        }
        EXPECT_GE(n, last_bucket[key]) << l;
        last_bucket[key] = n;
        if (m[4] == "+Inf") inf[key] = n;
    }
    ASSERT_FALSE(count.empty());
    for (const auto& [key, n] : count) {
        EXPECT_EQ(inf[key], n) << key;
        const std::string age = key.substr(0, key.find('/')), form = key.substr(key.find('/') + 1);
        EXPECT_EQ(ages[age][form]["count"].get<std::uint64_t>(), n) << key;
    }
}

// Proves: a run cut short by limits.max_events says so with an `event_bound` warning beside the
// others, so that a figure of half a run is not read as one of the whole; a whole run has none.
TEST(Warnings, EventBoundSaysTheRunWasCutShort) {
    const fs::path quickstart = kSourceDir / "scenarios" / "quickstart.json";
    const Outcome cut =
        kvcheck({"run", quickstart.string(), "--set", "/limits={\"max_events\": 500}", "--json", "--quiet"});
    ASSERT_EQ(cut.code, 0) << cut.all();
    const nlohmann::json report = nlohmann::json::parse(cut.out);
    ASSERT_TRUE(report["event_bound_hit"].get<bool>());
    ASSERT_FALSE(report["warnings"].empty());
    EXPECT_EQ(report["warnings"][0]["code"], "event_bound");
    EXPECT_EQ(report["warnings"][0]["message"],
              "the run stopped at limits.max_events after 500 events; its figures cover only the " +
                  report["requests"].dump() + " requests that arrived by then");
    EXPECT_LT(report["requests"].get<int>(), 400);
    const std::vector<std::string> whole = codes(run_json(quickstart, "validated"));
    EXPECT_EQ(std::count(whole.begin(), whole.end(), "event_bound"), 0);
}
