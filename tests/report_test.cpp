// report.html: rendered from real runs of scenarios/quickstart.json through the kvcheck binary, it is
// self-contained, well formed, deterministic and shows every chart; a compare's columns come in
// --policies order; bad run folders exit 2 with one line; and, where /usr/bin/chromium exists, a
// headless browser draws every chart without an error.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/invariants.hpp"
#include "sim/io/input_error.hpp"
#include "sim/report/metrics.hpp"
#include "sim/report/report_html.hpp"
#include "sim/report/report_svg.hpp"
#include "sim/report/run_folders.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kBinary = KVCHECK_BINARY;
const std::string kSource = KVCHECK_SOURCE_DIR;
const char* kChromium = "/usr/bin/chromium";

std::string fresh_dir(const std::string& tag) {
    std::string pattern = (fs::temp_directory_path() / ("kvcheck-report-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    return pattern;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Outcome {
    int code = -1;
    std::string err;
};

// Runs a shell command with stderr captured; returns the exit code.
Outcome run(const std::string& command, const std::string& scratch) {
    const std::string err = scratch + "/stderr.txt";
    const int status = std::system((command + " >" + scratch + "/stdout.txt 2>" + err).c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(err)};
}

std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
}

std::size_t lines(const std::string& text) { return count(text, "\n") + (text.empty() || text.back() == '\n' ? 0 : 1); }

// One `kvcheck compare` of the quickstart (naive vs validated), shared by the tests below.
class ReportTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_ = fresh_dir("scratch");
        compare_ = fresh_dir("compare");
        const Outcome o =
            run(kBinary + " compare " + kSource + "/scenarios/quickstart.json --quiet --out " + compare_, scratch_);
        ASSERT_EQ(o.code, 0) << o.err;
        const Outcome r = run(kBinary + " report " + compare_, scratch_);
        ASSERT_EQ(r.code, 0) << r.err;
        html_ = slurp(compare_ + "/report.html");
    }
    static void TearDownTestSuite() {
        fs::remove_all(scratch_);
        fs::remove_all(compare_);
    }
    static inline std::string scratch_;
    static inline std::string compare_;
    static inline std::string html_;
};

}  // namespace

// metrics.prom says what report.json says: every plain counter and gauge, a series for every
// catalogued invariant and every fault class (0 included, so that an alert has a series on a clean
// run), and the I/O-wait figures. Checked for both policies of the compare (naive violates, validated
// does not).
TEST_F(ReportTest, MetricsPromAgreesWithReportJson) {
    for (const std::string policy : {"naive", "validated"}) {
        SCOPED_TRACE(policy);
        const nlohmann::json report = nlohmann::json::parse(slurp(compare_ + "/" + policy + "/report.json"));
        const std::string prom = slurp(compare_ + "/" + policy + "/metrics.prom");
        std::map<std::string, double> samples;  // "name{labels}" -> value
        std::istringstream in(prom);
        for (std::string line; std::getline(in, line);) {
            if (line.empty() || line[0] == '#') continue;
            const std::size_t space = line.rfind(' ');
            ASSERT_NE(space, std::string::npos) << line;
            ASSERT_TRUE(samples.emplace(line.substr(0, space), std::stod(line.substr(space + 1))).second)
                << "repeated: " << line;
        }
        const std::string label = "scenario=\"" + report["scenario"].get<std::string>() + "\",policy=\"" + policy +
                                  "\",seed=\"" + std::to_string(report["seed"].get<std::uint64_t>()) + "\"";
        const auto sample = [&](const std::string& name, const std::string& extra = "") {
            const auto it = samples.find("kvcheck_" + name + "{" + label + extra + "}");
            return it == samples.end() ? -1.0 : it->second;
        };
        for (const auto& [metric, key] :
             std::vector<std::pair<std::string, std::string>>{{"lookups_total", "lookups"},
                                                              {"hits_total", "hits"},
                                                              {"silent_corruptions_total", "silent_corruptions"},
                                                              {"offloads_total", "offloads"},
                                                              {"demotions_total", "demotions"},
                                                              {"loads_total", "loads"},
                                                              {"load_failures_total", "load_failures"},
                                                              {"stale_revalidations_total", "stale_revalidations"},
                                                              {"admission_refusals_total", "admission_refusals"},
                                                              {"graph_recaptures_total", "graph_recaptures"},
                                                              {"prompt_tokens_total", "prompt_tokens"},
                                                              {"prefix_cache_queries_total", "prompt_tokens"},
                                                              {"prefix_cache_hits_total", "hit_tokens"},
                                                              {"recomputed_tokens_total", "recomputed_tokens"},
                                                              {"trimmed_tokens_total", "trimmed_tokens"}})
            EXPECT_EQ(sample(metric), report[key].get<double>()) << metric;
        // Gauges carry report.json's values exactly: metrics.prom writes the shortest text that reads back as the
        // value.
        EXPECT_EQ(sample("token_hit_rate"), report["token_hit_rate"].get<double>());
        EXPECT_EQ(sample("token_reuse_rate"), report["token_reuse_rate"].get<double>());
        for (const auto& [form, count] : report["evictions_last_copy"].items())
            EXPECT_EQ(sample("evictions_last_copy_total", ",form=\"" + form + "\""), count.get<double>()) << form;
        for (const auto& [form, reasons] : report["miss_tokens"].items())
            for (const auto& [reason, tokens] : reasons.items())
                EXPECT_EQ(sample("miss_tokens_total", ",form=\"" + form + "\",reason=\"" + reason + "\""),
                          tokens.get<double>())
                    << form << " " << reason;
        for (const auto& [source, tokens] : report["reused_tokens_by_source"].items())
            EXPECT_EQ(sample("reused_tokens_total", ",source=\"" + source + "\""), tokens.get<double>()) << source;
        EXPECT_EQ(prom.find("kvcheck_warning{"), std::string::npos) << "the quickstart raises no warning";
        EXPECT_EQ(sample("io_waits_total"), report["io_wait_ms"]["waits"].get<double>());
        // The latency histograms count every value: +Inf holds them all, and a bucket at or above the
        // nearest-rank p99 holds at least 99 % of them, one below p50 fewer than half.
        for (const auto& [metric, key] :
             {std::pair{"time_to_first_token_seconds", "ttft_ms"}, std::pair{"io_wait_seconds", "io_wait_ms"}}) {
            const double count = sample(std::string(metric) + "_count");
            EXPECT_GE(count, std::string(key) == "ttft_ms" ? 1 : 0) << metric;
            EXPECT_EQ(sample(std::string(metric) + "_bucket", ",le=\"+Inf\""), count) << metric;
            if (std::string(key) == "io_wait_ms") {
                EXPECT_EQ(count, report[key]["waits"].get<double>());
            }
            double below_p50 = -1;
            double above_p99 = -1;
            for (const auto& [name, value] : samples) {
                const std::size_t le = name.find(",le=\"");
                if (!name.starts_with("kvcheck_" + std::string(metric) + "_bucket{" + label) ||
                    le == std::string::npos || name.find("+Inf") != std::string::npos)
                    continue;
                const double bound_ms = std::stod(name.substr(le + 5)) * 1000;
                if (bound_ms < report[key]["p50"].get<double>()) below_p50 = std::max(below_p50, value);
                if (bound_ms >= report[key]["p99"].get<double>())
                    above_p99 = above_p99 < 0 ? value : std::min(above_p99, value);
            }
            EXPECT_LT(below_p50, count / 2) << metric;
            if (above_p99 >= 0) {
                EXPECT_GE(above_p99, 0.99 * count) << metric;
            }
        }
        ASSERT_EQ(report["invariant_violations"].size(), kvcheck::model::invariant_catalogue().size());
        for (const auto& [name, count] : report["invariant_violations"].items())
            EXPECT_EQ(sample("invariant_violations_total", ",invariant=\"" + name + "\""), count.get<double>()) << name;
        ASSERT_FALSE(report["evictions_by_cause"].empty());
        for (const auto& [cause, forms] : report["evictions_by_cause"].items())
            for (const auto& [form, count] : forms.items())
                EXPECT_EQ(sample("evictions_total", ",form=\"" + form + "\",cause=\"" + cause + "\""),
                          count.get<double>())
                    << form << " " << cause;
        for (int k = 1; k <= 11; ++k) {
            const std::string fault = "F" + std::to_string(k);
            const double injected = report["faults_injected"].value(fault, 0.0);
            EXPECT_EQ(sample("faults_injected_total", ",fault=\"" + fault + "\""), injected) << fault;
        }
    }
    const nlohmann::json naive = nlohmann::json::parse(slurp(compare_ + "/naive/report.json"));
    EXPECT_GT(naive["silent_corruptions"].get<double>(), 0)
        << "the quickstart's naive run should corrupt, or the check above is weak";
    EXPECT_GT(naive["faults_injected"].size(), 0u);
}

// requests_by_reuse_pct counts every request's read once, in the bucket of the share of its prompt
// it resumed, and metrics.prom carries the same counts as a cumulative histogram. naive resumes
// all of every hit, so it resumes nothing exactly where nothing hit (its full_recompute verdicts);
// validated, which falls back after hits, resumes nothing more often.
TEST_F(ReportTest, ReuseHistogramCountsEveryReadOnce) {
    const std::vector<std::string> ranges = {"0", "0-10", "10-25", "25-50", "50-75", "75-90", "90-100"};
    const std::vector<std::string> bounds = {"0", "0.1", "0.25", "0.5", "0.75", "0.9", "1", "+Inf"};
    std::map<std::string, nlohmann::json> reports;
    for (const std::string policy : {"naive", "validated"}) {
        SCOPED_TRACE(policy);
        const nlohmann::json report = nlohmann::json::parse(slurp(compare_ + "/" + policy + "/report.json"));
        const std::string prom = slurp(compare_ + "/" + policy + "/metrics.prom");
        const nlohmann::json& buckets = report["requests_by_reuse_pct"];
        ASSERT_EQ(buckets.size(), ranges.size()) << buckets.dump();
        std::uint64_t reads = 0;
        for (std::size_t b = 0; b < bounds.size(); ++b) {
            if (b < ranges.size()) reads += buckets.at(ranges[b]).get<std::uint64_t>();
            const std::string line = "kvcheck_request_reuse_ratio_bucket{scenario=\"quickstart\",policy=\"" + policy +
                                     "\",seed=\"1\",le=\"" + bounds[b] + "\"} " + std::to_string(reads) + "\n";
            EXPECT_NE(prom.find(line), std::string::npos) << line;
        }
        EXPECT_EQ(reads, report["requests"].get<std::uint64_t>());
        EXPECT_NE(prom.find("kvcheck_request_reuse_ratio_count{scenario=\"quickstart\",policy=\"" + policy +
                            "\",seed=\"1\"} " + std::to_string(reads) + "\n"),
                  std::string::npos);
        reports[policy] = report;
    }
    EXPECT_EQ(reports["naive"]["requests_by_reuse_pct"]["0"], reports["naive"]["verdicts"]["full_recompute"]);
    EXPECT_GT(reports["validated"]["requests_by_reuse_pct"]["0"].get<int>(),
              reports["naive"]["requests_by_reuse_pct"]["0"].get<int>());
    // A report.json written before the figures existed still renders, without their charts.
    std::vector<kvcheck::sim::NamedReport> older = kvcheck::sim::load_run_reports(compare_);
    for (kvcheck::sim::NamedReport& nr : older)
        for (const char* key : {"requests_by_reuse_pct", "reused_tokens_by_source", "prompt_tokens", "token_hit_rate",
                                "token_reuse_rate", "trimmed_tokens", "resume_grain_tokens", "warnings",
                                "evictions_by_cause", "miss_tokens", "evictions_last_copy", "demotions"})
            nr.report.erase(key);
    const std::string page = kvcheck::sim::report_html(older);
    EXPECT_EQ(count(page, "Not in this report: it predates the figure."), 6u);
    EXPECT_EQ(count(page, "<svg class=\"chart\""), count(html_, "<svg class=\"chart\"") - 6);
    EXPECT_EQ(count(page, "<tr><th>trimmed_tokens</th><td>-</td></tr>"), 2u);
    EXPECT_EQ(count(page, "<tr><th>demotions</th><td>-</td></tr>"), 2u);
}

// Every metrics.prom sample names its scenario and policy, so a suite's files can share one
// textfile collector's folder; a name's quote, backslash and line feed are escaped as the text
// format requires, never cut short or passed through.
TEST(MetricsProm, EverySampleNamesItsRunWithEscapedValues) {
    kvcheck::sim::RunInfo info;
    info.scenario = "say \"hi\" \\ there\nnext";
    info.policy = "validated";
    const std::string prom = kvcheck::sim::prometheus_text(info, kvcheck::sim::Metrics{});
    const std::string run = "{scenario=\"say \\\"hi\\\" \\\\ there\\nnext\",policy=\"validated\"";
    std::istringstream in(prom);
    std::size_t samples = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        ++samples;
        EXPECT_NE(line.find(run), std::string::npos) << line;
    }
    EXPECT_GT(samples, 40u);
}

// The Counters table shows every count of the report: post-hit fallbacks beside the rate, and the
// workload's own counts (sampled answers forked, session turns and waits) in a row for each that
// any column has, 0 in a column whose run had none.
TEST_F(ReportTest, CountersShowFallbacksAndWorkloadCounts) {
    EXPECT_EQ(count(html_, "<tr><th>post_hit_fallbacks</th>"), 2u);
    EXPECT_EQ(count(html_, "<tr><th>sessions.turns</th>"), 0u) << "no column ran sessions";
    std::vector<kvcheck::sim::NamedReport> reports = kvcheck::sim::load_run_reports(compare_);
    ASSERT_EQ(reports.size(), 2u);
    reports[1].report["sessions"] = {{"turns", 108}, {"waited", 45}};
    reports[1].report["samples_forked"] = 1200;
    const std::string page = kvcheck::sim::report_html(reports);
    const std::string fallbacks = kvcheck::sim::svg::format_value(reports[0].report["post_hit_fallbacks"].get<double>(),
                                                                  kvcheck::sim::svg::Unit::count);
    EXPECT_EQ(count(page, "<tr><th>post_hit_fallbacks</th><td>" + fallbacks + "</td></tr>"), 1u) << fallbacks;
    EXPECT_EQ(count(page, "<tr><th>sessions.turns</th><td>108</td></tr>"), 1u);
    EXPECT_EQ(count(page, "<tr><th>sessions.waited</th><td>45</td></tr>"), 1u);
    EXPECT_EQ(count(page, "<tr><th>samples_forked</th><td>1,200</td></tr>"), 1u);
    EXPECT_EQ(count(page, "<tr><th>sessions.turns</th><td>0</td></tr>"), 1u);
}

// The compare page is one well-formed, self-contained document with both policies side by side.
TEST_F(ReportTest, CompareFolderRendersBothPoliciesSideBySide) {
    ASSERT_FALSE(html_.empty());
    EXPECT_EQ(html_.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(html_.find("</html>"), std::string::npos);
    for (const char* tag : {"svg", "table", "figure", "div", "script", "p", "h2", "h3"}) {
        const std::string open = "<" + std::string(tag);
        std::size_t opens = 0;
        for (const char* follow : {" ", ">"}) opens += count(html_, open + follow);
        EXPECT_EQ(opens, count(html_, "</" + std::string(tag) + ">")) << "unbalanced <" << tag << ">";
    }
    // Nothing is fetched: no external script, style, font or image; the only URL is the SVG namespace.
    for (const char* external : {"<link", "@import", "url(", " src=", "<img", "<iframe"})
        EXPECT_EQ(count(html_, external), 0u) << external;
    EXPECT_EQ(count(html_, "http"), count(html_, "http://www.w3.org/2000/svg"));
    EXPECT_EQ(count(html_, "<table class=\"comparison\">"), 1u);
    EXPECT_NE(html_.find("<h3>naive</h3>"), std::string::npos);
    EXPECT_NE(html_.find("<h3>validated</h3>"), std::string::npos);
    EXPECT_NE(html_.find("--columns:2"), std::string::npos);
    for (const char* row : {"Hits and post-hit fallbacks", "Verdicts", "Reuse per request", "Misses", "Memory",
                            "Latency", "Silent corruptions", "Invariants", "Counters"})
        EXPECT_EQ(count(html_, "<h2>" + std::string(row) + "</h2>"), 1u) << row;
    // Thirteen charts per policy: rates, verdicts, reuse per request, reused tokens by source, miss
    // reasons, tokens cut by them, GPU memory, offloaded bytes, TTFT, I/O wait, summed I/O wait,
    // silent corruptions over time (naive has some) and invariant violations.
    EXPECT_EQ(count(html_, "<svg class=\"chart\""), 26u);
    EXPECT_NE(html_.find("No silent corruption, no invariant violated"), std::string::npos);  // validated
    EXPECT_NE(html_.find("OR1_ground_truth"), std::string::npos);  // naive's explained corruptions
    EXPECT_NE(html_.find("report.json keeps the p50 and p99"), std::string::npos);
}

// Same reports, same bytes: rendering again, or rendering a second identical compare run, changes nothing.
TEST_F(ReportTest, OutputIsDeterministic) {
    const std::vector<kvcheck::sim::NamedReport> reports = kvcheck::sim::load_run_reports(compare_);
    ASSERT_EQ(reports.size(), 2u);
    EXPECT_EQ(reports[0].name, "naive");
    EXPECT_EQ(kvcheck::sim::report_html(reports), html_);
    const std::string again = fresh_dir("again");
    ASSERT_EQ(run(kBinary + " compare " + kSource + "/scenarios/quickstart.json --quiet --out " + again, scratch_).code,
              0);
    ASSERT_EQ(run(kBinary + " report " + again + " -o " + again + "/page.html", scratch_).code, 0);
    EXPECT_EQ(slurp(again + "/page.html"), html_);
    fs::remove_all(again);
}

// `run --html` writes report.html next to report.json: one column, no comparison table.
TEST_F(ReportTest, RunHtmlWritesASingleColumnPage) {
    const std::string out = fresh_dir("run");
    const Outcome o =
        run(kBinary + " run " + kSource + "/scenarios/quickstart.json --quiet --html --out " + out, scratch_);
    ASSERT_EQ(o.code, 0) << o.err;
    const std::string page = slurp(out + "/report.html");
    EXPECT_NE(page.find("--columns:1"), std::string::npos);
    EXPECT_EQ(count(page, "<table class=\"comparison\">"), 0u);
    EXPECT_EQ(count(page, "<svg class=\"chart\""), 12u);  // validated has no corruption, so no corruption curve
    EXPECT_EQ(run(kBinary + " run " + kSource + "/scenarios/quickstart.json --quiet --html", scratch_).code,
              2);  // --html needs --out
    fs::remove_all(out);
}

// A steps-mode run has no time series: the page says so instead of drawing empty axes.
TEST_F(ReportTest, StepsModeRunRendersWithoutSeries) {
    const std::string out = fresh_dir("steps");
    ASSERT_EQ(run(kBinary + " run " + kSource + "/scenarios/regress/naive.json --quiet --out " + out, scratch_).code,
              0);
    ASSERT_EQ(run(kBinary + " report " + out, scratch_).code, 0);
    const std::string page = slurp(out + "/report.html");
    EXPECT_NE(page.find("No time series in this report"), std::string::npos);
    EXPECT_NE(page.find("this report explains none"), std::string::npos);
    fs::remove_all(out);
}

// Bad input is one line on stderr and exit code 2, naming the file and the place.
TEST_F(ReportTest, BadRunFoldersExitTwoWithOneLine) {
    const std::string bad = fresh_dir("bad");
    const auto expect_input_error = [&](const std::string& dir, const std::string& mention) {
        const Outcome o = run(kBinary + " report " + dir, scratch_);
        EXPECT_EQ(o.code, 2) << dir;
        EXPECT_EQ(lines(o.err), 1u) << o.err;
        EXPECT_NE(o.err.find(mention), std::string::npos) << o.err;
    };
    expect_input_error(bad + "/missing", "no such folder");
    expect_input_error(bad, "no report.json here or in its subfolders");
    const std::string good = slurp(compare_ + "/validated/report.json");
    const auto write = [&](const std::string& name, const std::string& text) {
        fs::create_directories(bad + "/" + name);
        std::ofstream(bad + "/" + name + "/report.json") << text;
        return bad + "/" + name;
    };
    expect_input_error(write("broken", good.substr(0, good.size() / 2)), "report.json:");
    expect_input_error(write("empty", ""), "invalid JSON");
    expect_input_error(write("shape", std::regex_replace(good, std::regex("\"verdicts\""), "\"verdict_counts\"")),
                       "/verdicts: missing");
    expect_input_error(
        write("type", std::regex_replace(good, std::regex("\"hit_rate\": [0-9.e-]+"), "\"hit_rate\": \"high\"")),
        "/hit_rate: expected a number");
    expect_input_error(
        write("schema", std::regex_replace(good, std::regex("\"schema_version\": 1"), "\"schema_version\": 99")),
        "/schema_version: report schema 99");
    // A figure added after schema 1 (entry ages) is checked when a report has it.
    nlohmann::json aged = nlohmann::json::parse(good);
    aged["entry_ages_ms"]["lifetime"]["all"]["p50"] = -5;
    expect_input_error(write("ages", aged.dump(2)),
                       "/entry_ages_ms/lifetime/all/p50: expected a number of 0 or more, got -5");
    EXPECT_THROW(kvcheck::sim::load_run_reports(bad + "/type"), kvcheck::sim::InputError);
    fs::remove_all(bad);
}

// A compare's columns come in --policies order, by the manifest compare.json, whatever the folder
// names; a subfolder the manifest does not name (added by hand) follows them, and a folder without
// a manifest (an older compare, a hand-made one) keeps folder-name order.
TEST_F(ReportTest, CompareColumnsFollowThePoliciesOrder) {
    const std::string out = fresh_dir("order");
    const std::string toy = kSource + "/scenarios/preset-toy.json";
    ASSERT_EQ(
        run(kBinary + " compare " + toy + " --policies validated,naive --seed 5 --quiet --out " + out, scratch_).code,
        0);
    ASSERT_TRUE(fs::exists(out + "/compare.json"));
    const kvcheck::sim::CompareManifest manifest = kvcheck::sim::read_compare_manifest(out + "/compare.json");
    EXPECT_EQ(manifest.scenario, toy);
    EXPECT_EQ(manifest.seed, 5u);
    EXPECT_EQ(manifest.policies, (std::vector<std::string>{"validated", "naive"}));
    const auto columns = [&] {
        std::string names;
        for (const kvcheck::sim::NamedReport& nr : kvcheck::sim::load_run_reports(out)) names += nr.name + ",";
        return names;
    };
    EXPECT_EQ(columns(), "validated,naive,");
    ASSERT_EQ(run(kBinary + " report " + out, scratch_).code, 0);
    const std::string page = slurp(out + "/report.html");
    EXPECT_NE(page.find("runs side by side: validated, naive"), std::string::npos);
    EXPECT_LT(page.find("<h3>validated</h3>"), page.find("<h3>naive</h3>"));

    fs::copy(out + "/naive", out + "/a-copy", fs::copy_options::recursive);
    EXPECT_EQ(columns(), "validated,naive,a-copy,");
    fs::remove(out + "/compare.json");
    EXPECT_EQ(columns(), "a-copy,naive,validated,");
    fs::remove_all(out);
}

// A manifest that names a folder without report.json, or is malformed, is bad input: exit 2 and
// one line naming compare.json and the JSON pointer.
TEST_F(ReportTest, BadCompareManifestExitsTwoWithOneLine) {
    const std::string out = fresh_dir("manifest");
    ASSERT_EQ(run(kBinary + " compare " + kSource +
                      "/scenarios/preset-toy.json --policies validated,naive --quiet --out " + out,
                  scratch_)
                  .code,
              0);
    const std::string good = slurp(out + "/compare.json");
    const auto expect_input_error = [&](const std::string& mention) {
        const Outcome o = run(kBinary + " report " + out, scratch_);
        EXPECT_EQ(o.code, 2) << o.err;
        EXPECT_EQ(lines(o.err), 1u) << o.err;
        EXPECT_NE(o.err.find("kvcheck: " + out + "/compare.json:" + mention), std::string::npos) << o.err;
    };
    fs::remove_all(out + "/naive");
    expect_input_error("/policies/1: names policy \"naive\", but there is no naive/report.json next to this manifest");
    const auto manifest = [&](const std::string& text) { std::ofstream(out + "/compare.json") << text; };
    manifest(std::regex_replace(good, std::regex("\"naive\""), "\"validated\""));
    expect_input_error("/policies/1: \"validated\" is listed twice");
    manifest(std::regex_replace(good, std::regex("\"naive\""), "\"../validated\""));
    expect_input_error("/policies/1: \"../validated\" is not a folder name");
    manifest(std::regex_replace(good, std::regex("\"seed\": [0-9]+"), "\"seed\": -1"));
    expect_input_error("/seed: expected a whole number of 0 or more, got -1");
    manifest(good.substr(0, good.size() / 2));
    expect_input_error("");
    EXPECT_FALSE(fs::exists(out + "/report.html"));
    fs::remove_all(out);
}

// Proves: headless Chromium lays out every chart of every kind of page (a two-policy compare, a
// three-policy compare, a single run, a suite's index), each page records no script or console
// error, and none is wider than a 1,400-pixel window (three policies side by side included).
TEST_F(ReportTest, HeadlessChromiumDrawsEveryChart) {
    if (!fs::exists(kChromium))
        GTEST_SKIP() << kChromium << " not found: install the Debian package chromium to run this check";
    const std::string pages = fresh_dir("pages");
    const std::string quickstart = kSource + "/scenarios/quickstart.json";
    ASSERT_EQ(run(kBinary + " compare " + quickstart +
                      " --policies validated,naive,no-revalidate --quiet --html --out " + pages + "/three",
                  scratch_)
                  .code,
              1);
    ASSERT_EQ(run(kBinary + " run " + quickstart + " --quiet --html --out " + pages + "/single", scratch_).code, 0);
    ASSERT_EQ(run(kBinary + " run " + kSource + "/scenarios -k 'fault-f1*' --quiet --html --out " + pages + "/suite",
                  scratch_)
                  .code,
              0);
    for (const std::string& page : {compare_ + "/report.html", pages + "/three/report.html",
                                    pages + "/single/report.html", pages + "/suite/index.html"}) {
        SCOPED_TRACE(page);
        const std::string profile = fresh_dir("chromium-profile");
        const std::string flags =
            " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
            " --disable-component-update --disable-sync --enable-logging=stderr --v=0 --window-size=1400,900"
            " --user-data-dir=" +
            profile;
        const Outcome o = run("timeout 120 " + std::string(kChromium) + flags + " --dump-dom file://" + page, scratch_);
        fs::remove_all(profile);
        ASSERT_EQ(o.code, 0) << o.err;
        const std::string dom = slurp(scratch_ + "/stdout.txt");
        const std::size_t charts = count(slurp(page), "<svg class=\"chart\"");
        std::smatch m;
        ASSERT_TRUE(std::regex_search(
            dom, m,
            std::regex(
                "<body data-charts-drawn=\"([0-9]+)\" data-page-errors=\"([0-9]+)\" data-overflow-x=\"(\\w+)\"")))
            << "the page's check script did not run";
        EXPECT_EQ(std::stoul(m[1].str()), charts);
        EXPECT_EQ(m[2].str(), "0") << dom.substr(dom.find("id=\"page-errors\""), 400);
        EXPECT_EQ(m[3].str(), "false") << "wider than a 1,400-pixel window";
        EXPECT_EQ(count(dom, "data-drawn=\"1\""), charts);
        EXPECT_EQ(count(o.err, "Uncaught"), 0u) << o.err;
    }
    fs::remove_all(pages);
}

// Proves: a share that is an exact half in decimal rounds up on the page, though its double lies
// just below the half (115/400 is 0.28749999999999998).
TEST(ReportValues, SharesRoundHalvesUp) {
    using kvcheck::sim::svg::Unit;
    EXPECT_EQ(kvcheck::sim::svg::format_value(115.0 / 400.0, Unit::ratio), "28.8%");
    EXPECT_EQ(kvcheck::sim::svg::format_value(37.0 / 400.0, Unit::ratio), "9.3%");
    EXPECT_EQ(kvcheck::sim::svg::format_value(5.0 / 400.0, Unit::ratio), "1.3%");
    EXPECT_EQ(kvcheck::sim::svg::format_value(1.0 / 3.0, Unit::ratio), "33.3%");
}

// Text from a scenario (its name, a file name, a message) goes into report.html and JUnit XML
// through one escape: markup escaped, and what XML 1.0 cannot hold and HTML calls a parse error
// (control characters, U+FFFE and U+FFFF, bytes that are not UTF-8) replaced by U+FFFD, while
// tabs, line breaks and other UTF-8 text stay.
TEST(ReportEscape, MarkupAndCharactersXmlCannotHold) {
    const std::string replacement = "\xEF\xBF\xBD";
    EXPECT_EQ(kvcheck::sim::svg::escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    EXPECT_EQ(kvcheck::sim::svg::escape("a\x01\x1b[31m\x7f"), "a" + replacement + replacement + "[31m" + replacement);
    EXPECT_EQ(kvcheck::sim::svg::escape("x\xEF\xBF\xBEy\xEF\xBF\xBFz"), "x" + replacement + "y" + replacement + "z");
    EXPECT_EQ(kvcheck::sim::svg::escape("b\xFFx"), "b" + replacement + "x");
    EXPECT_EQ(kvcheck::sim::svg::escape("t\tn\nr\r \xC3\xA9 \xEF\xBF\xBD"), "t\tn\nr\r \xC3\xA9 \xEF\xBF\xBD");
}

// Proves: the page says first whether the run passed, per column and for the page: a failing
// column lists its failures and links its counterexample (the file exists), a passing column
// whose corruptions its expectation allows shows them grey, not red; each names its reproduce
// line and the kvcheck (with commit) that ran; `compare --html` writes the page itself.
TEST_F(ReportTest, PageSaysTheVerdictFirst) {
    const std::string out = fresh_dir("verdict");
    const Outcome o =
        run(kBinary + " compare " + kSource +
                "/scenarios/quickstart.json --policies validated,naive,no-revalidate --quiet --html --out " + out,
            scratch_);
    EXPECT_EQ(o.code, 1) << o.err;  // no-revalidate has no expectation there: judged strictly, it fails
    const std::string page = slurp(out + "/report.html");
    const std::size_t top = page.find("<p class=\"verdict fail\">FAIL<span> 1 of the 3 runs failed: no-revalidate");
    ASSERT_NE(top, std::string::npos) << page.substr(0, 2000);
    EXPECT_LT(top, page.find("<h2>Comparison</h2>"));
    EXPECT_EQ(count(page, "<p class=\"verdict pass\">PASS<span> judged by expect."), 2u);
    EXPECT_NE(page.find("<p class=\"verdict fail\">FAIL<span> judged by strict"), std::string::npos);
    EXPECT_NE(page.find("<li>48 silent corruptions</li>"), std::string::npos);
    EXPECT_NE(page.find("invariant violations, as expect.naive expects</p>"), std::string::npos);
    EXPECT_NE(page.find("class=\"badge allowed\""), std::string::npos);
    EXPECT_EQ(count(page, "class=\"badge bad\""), 1u) << "only the failing column is red";
    EXPECT_NE(page.find("--policy no-revalidate --seed 1</code>"), std::string::npos);
    EXPECT_NE(page.find("(commit "), std::string::npos);
    EXPECT_NE(page.find("<p class=\"description\">DeepSeek-V4 hybrid cache"), std::string::npos);
    std::smatch link;
    ASSERT_TRUE(std::regex_search(page, link, std::regex("counterexample: <a href=\"([^\"]+)\">")))
        << page.substr(0, 3000);
    EXPECT_EQ(link[1].str(), "no-revalidate/counterexample.json");
    EXPECT_TRUE(fs::exists(out + "/" + link[1].str()));
    fs::remove_all(out);
}

// Proves: `run DIR --out OUT` writes OUT/index.html over the suite: failures first, each linking
// to its case's report (report.html with --html) and naming its reproduce line.
TEST_F(ReportTest, SuiteRunWritesAnIndexPage) {
    const std::string out = fresh_dir("index");
    const Outcome o = run(kBinary + " run " + kSource +
                              "/scenarios -k 'fault-f1*' -k preset-toy --policy naive --quiet --html --out " + out,
                          scratch_);
    EXPECT_EQ(o.code, 1) << o.err;
    const std::string page = slurp(out + "/index.html");
    EXPECT_NE(page.find("<p class=\"verdict fail\">FAIL<span> "), std::string::npos) << page;
    std::vector<std::string> links;
    const std::regex href("<a href=\"([^\"]+)\">");
    for (auto it = std::sregex_iterator(page.begin(), page.end(), href); it != std::sregex_iterator(); ++it)
        links.push_back((*it)[1].str());
    EXPECT_EQ(links.size(), 4u);
    for (const std::string& l : links) EXPECT_TRUE(fs::exists(out + "/" + l)) << l;
    EXPECT_LT(page.find("class=\"badge bad\">failed"), page.find("class=\"badge ok\">passed")) << "failures first";
    EXPECT_NE(page.find("<code>"), std::string::npos);
    fs::remove_all(out);
}

// Proves: a count axis has whole-number ticks only (a top of 1 is "0" and "1", never "0, 0, 1,
// 1, 1"), and a cumulative line drawn in steps holds each value to the next point.
TEST(ReportCharts, CountTicksAreWholeAndCumulativeLinesStep) {
    using kvcheck::sim::svg::Unit;
    const std::vector<double> t = {0, 1, 2};
    const std::vector<kvcheck::sim::svg::Line> line = {{"n", "#000", {0, 1, 1}}};
    for (const double top : {1.0, 2.0, 6.0, 40.0}) {
        const std::string chart = kvcheck::sim::svg::line_chart("c", t, 2, line, top, Unit::count);
        std::vector<std::string> ticks;
        const std::regex label("text-anchor=\"end\">([^<]+)</text>");
        for (auto it = std::sregex_iterator(chart.begin(), chart.end(), label); it != std::sregex_iterator(); ++it)
            ticks.push_back((*it)[1].str());
        ASSERT_GE(ticks.size(), 2u) << top;
        for (std::size_t i = 1; i < ticks.size(); ++i) EXPECT_NE(ticks[i], ticks[i - 1]) << top << ": " << chart;
        EXPECT_EQ(ticks.back(), kvcheck::sim::svg::format_value(top, Unit::count));
    }
    const std::string ramp = kvcheck::sim::svg::line_chart("c", t, 2, line, 1, Unit::count);
    const std::string steps = kvcheck::sim::svg::line_chart("c", t, 2, line, 1, Unit::count, true);
    const auto points = [](const std::string& chart) {
        const std::size_t at = chart.find("points=\"") + 8;
        const std::string list = chart.substr(at, chart.find('"', at) - at);
        return static_cast<std::size_t>(std::count(list.begin(), list.end(), ','));
    };
    EXPECT_EQ(points(ramp), 3u);
    EXPECT_EQ(points(steps), 5u);  // each later point is reached by a flat step, then a rise
}
