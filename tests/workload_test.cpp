// Unit tests of sim/workload: the trace readers (every format; bad lines are in
// trace_errors_test.cpp), the statistics, the Azure sharing model, the synthesizer and the `kvcheck trace` command.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/io/input_error.hpp"
#include "sim/workload/stats.hpp"
#include "sim/workload/synth.hpp"
#include "sim/workload/trace.hpp"
#include "sim/workload/trace_writer.hpp"
#include "tests/workload_fixtures.hpp"

namespace kvcheck::sim {
namespace {

// A public trace from fetch-traces (traces/) or from the shared folder, or "" when neither exists.
std::string real_trace(const std::string& relative) {
    for (const std::string& root :
         {std::string(KVCHECK_SOURCE_DIR) + "/traces/", std::string(KVCHECK_SOURCE_DIR) + "/../shared/traces/"})
        if (fs::exists(root + relative)) return root + relative;
    return "";
}

// Proves: Mooncake lines give relative arrivals, lengths, ids and line numbers; a BOM, CRLF
// endings and blank lines are accepted.
TEST_F(Workload, MooncakeLinesParse) {
    const std::string path = write(
        "m.jsonl",
        "\xEF\xBB\xBF{\"timestamp\": 1000, \"input_length\": 1025, \"output_length\": 7, \"hash_ids\": [0, 1, 2]}\r\n"
        "\n"
        "{\"timestamp\": 1003, \"input_length\": 512, \"output_length\": 0, \"hash_ids\": [0]}\n");
    const auto records = read_all(path, TraceOptions{});
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].arrival_ns, 0u);
    EXPECT_EQ(records[0].input_tokens, 1025u);
    EXPECT_EQ(records[0].output_tokens, 7u);
    EXPECT_EQ(records[0].block_tokens, 512u);
    EXPECT_EQ(records[0].block_ids, (std::vector<std::uint64_t>{0, 1, 2}));
    EXPECT_EQ(records[1].arrival_ns, 3'000'000u);
    EXPECT_EQ(records[1].line, 3u);
}

// Proves: "-0", which nlohmann reads as a signed zero, is 0 wherever a trace wants an unsigned
// integer, as the scenario loader takes it (it used to fail with "got 0").
TEST_F(Workload, NegativeZeroIsZero) {
    const std::string path =
        write("zero.jsonl", "{\"timestamp\": -0, \"input_length\": 10, \"output_length\": -0, \"hash_ids\": [-0]}\n");
    for (const TraceFormat format : {TraceFormat::mooncake, TraceFormat::jsonl}) {
        TraceOptions options;
        options.format = format;
        const auto records = read_all(path, options);
        ASSERT_EQ(records.size(), 1u);
        EXPECT_EQ(records[0].arrival_ns, 0u);
        EXPECT_EQ(records[0].output_tokens, 0u);
        EXPECT_EQ(records[0].block_ids, (std::vector<std::uint64_t>{0}));
    }
}

// Proves: general JSONL takes numeric, float and string timestamps in the declared unit, makes
// absolute times relative, and checks ids against a custom block size.
TEST_F(Workload, JsonlTimeUnitsAndBlockSize) {
    const std::string path =
        write("g.jsonl",
              "{\"timestamp\": \"1700000000.25\", \"input_length\": 17, \"output_length\": 1, \"hash_ids\": [5, 9]}\n"
              "{\"timestamp\": 1700000000.5, \"input_length\": 16, \"output_length\": 2, \"hash_ids\": [5], \"extra\": "
              "true}\n"
              "{\"timestamp\": 1700000002, \"input_length\": 1, \"output_length\": 3, \"hash_ids\": [7]}\n");
    const auto records = read_all(path, jsonl(TimeUnit::s, 16));
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0].arrival_ns, 0u);
    EXPECT_EQ(records[1].arrival_ns, 250'000'000u);
    EXPECT_EQ(records[2].arrival_ns, 1'750'000'000u);
    EXPECT_EQ(records[0].block_tokens, 16u);
    EXPECT_EQ(records[0].block_ids, (std::vector<std::uint64_t>{5, 9}));
    EXPECT_EQ(records[2].block_ids, (std::vector<std::uint64_t>{7}));

    const std::string micro =
        write("u.jsonl", "{\"timestamp\": \"12.5\", \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n"
                         "{\"timestamp\": 40, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n");
    EXPECT_EQ(read_all(micro, jsonl(TimeUnit::us, 512))[1].arrival_ns, 27'500u);
    EXPECT_EQ(read_all(micro, jsonl(TimeUnit::ns, 512))[1].arrival_ns, 28u);  // 12.5 ns truncates to 12
    const std::string edge = write("e.jsonl", "{\"timestamp\": \"18446744073709.9\", \"input_length\": 1, "
                                              "\"output_length\": 1, \"hash_ids\": [1]}\n");
    EXPECT_THROW(read_all(edge, jsonl(TimeUnit::ms, 512)), InputError) << "the fraction must not wrap around";
}

// Proves: the Azure CSV parses wall-clock timestamps (last line without a newline) and the
// sharing model gives each request one id per block, the same for the same seed only.
TEST_F(Workload, AzureCsvParses) {
    const std::string path = write("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                            "2023-11-16 18:17:03.9799600,4808,10\n"
                                            "2023-11-16 18:17:04.0319600,3180,8\n"
                                            "2023-11-16 18:17:05.0000000,100,27");
    const auto first = read_all(path, azure(1));
    ASSERT_EQ(first.size(), 3u);
    EXPECT_EQ(first[1].arrival_ns, 52'000'000u);
    EXPECT_EQ(first[2].arrival_ns, 1'020'040'000u);
    EXPECT_EQ(first[0].block_ids.size(), 10u);
    EXPECT_EQ(first[2].block_ids.size(), 1u);
    EXPECT_EQ(first[2].output_tokens, 27u);
    const auto again = read_all(path, azure(1));
    for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].block_ids, again[i].block_ids);
    EXPECT_EQ(parse_wall_clock_ns("2023-11-16 18:17:03.9799600"), 1'700'158'623'979'960'000u);
    EXPECT_EQ(parse_wall_clock_ns("1970-01-01 00:00:00"), 0u);
    EXPECT_EQ(parse_wall_clock_ns("2000-03-01T00:00:00"), 951'868'800'000'000'000u);
    EXPECT_EQ(parse_wall_clock_ns("2400-02-29 23:59:59"), 13'574'649'599'000'000'000u);
    EXPECT_FALSE(parse_wall_clock_ns("2023-02-29 00:00:00"));
    EXPECT_FALSE(parse_wall_clock_ns("2023-11-16 24:00:00"));
}

// Proves: the sharing model shares only whole blocks, keeps prefix lengths within bounds, and
// with unshared_ppm at a million gives every request unique ids.
TEST_F(Workload, SharingModelBounds) {
    AzureSharing params;
    PrefixSharing sharing(params, 16, 7);
    for (std::uint32_t p = 0; p < params.prefixes; ++p) {
        EXPECT_GE(sharing.prefix_blocks(p), params.prefix_blocks_min);
        EXPECT_LE(sharing.prefix_blocks(p), params.prefix_blocks_max);
    }
    const std::uint64_t prefix_id_end = std::uint64_t{params.prefixes} * params.prefix_blocks_max;
    std::vector<std::uint64_t> ids;
    std::uint64_t shared_requests = 0;
    for (int i = 0; i < 2000; ++i) {
        sharing.assign(static_cast<std::uint32_t>(1 + i % 200), ids);
        ASSERT_EQ(ids.size(), blocks_for(static_cast<std::uint32_t>(1 + i % 200), 16));
        std::size_t shared = 0;
        while (shared < ids.size() && ids[shared] < prefix_id_end) ++shared;
        EXPECT_LE(shared * 16, static_cast<std::size_t>(1 + i % 200)) << "a partial block is never shared";
        shared_requests += shared > 0;
    }
    EXPECT_GT(shared_requests, 1000u);
    params.unshared_ppm = 1'000'000;
    PrefixSharing none(params, 16, 7);
    none.assign(160, ids);
    for (std::uint64_t id : ids) EXPECT_GE(id, prefix_id_end);
}

// Proves: Mooncake refuses other units or block sizes instead of silently ignoring them, and
// the limit stops after that many requests.
TEST_F(Workload, OptionsAreChecked) {
    const std::string path =
        write("m.jsonl", "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
                         "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n");
    TraceOptions options;
    options.block_tokens = 16;
    EXPECT_THROW(TraceReader::open(path, options), InputError);
    options = TraceOptions{};
    options.limit = 1;
    EXPECT_EQ(read_all(path, options).size(), 1u);
    EXPECT_EQ(guess_trace_format("x/y.csv"), TraceFormat::azure);
    EXPECT_EQ(guess_trace_format("x/y.jsonl"), TraceFormat::mooncake);
    EXPECT_EQ(parse_time_unit("us"), TimeUnit::us);
    EXPECT_THROW(parse_trace_format("parquet"), InputError);
}

// Proves: the statistics of a hand-made trace: reuse counts chained prefixes (an id after a
// different prefix is new), and each request lands in the right sharing class.
TEST_F(Workload, StatsOfHandMadeTrace) {
    const std::string path = write(
        "s.jsonl", "{\"timestamp\": 0, \"input_length\": 12, \"output_length\": 1, \"hash_ids\": [0, 1, 2]}\n"
                   "{\"timestamp\": 2, \"input_length\": 12, \"output_length\": 2, \"hash_ids\": [0, 1, 3]}\n"
                   "{\"timestamp\": 3, \"input_length\": 8, \"output_length\": 3, \"hash_ids\": [9, 1]}\n"
                   "{\"timestamp\": 7, \"input_length\": 14, \"output_length\": 4, \"hash_ids\": [0, 1, 3, 5]}\n");
    const TraceStats s = compute_trace_stats(path, jsonl(TimeUnit::s, 4));
    EXPECT_EQ(s.requests, 4u);
    EXPECT_DOUBLE_EQ(s.span_s, 7.0);
    EXPECT_EQ(s.input_tokens, 46u);
    EXPECT_EQ(s.output_tokens, 10u);
    EXPECT_EQ(s.block_references, 12u);
    EXPECT_EQ(s.reused_blocks, 5u);    // [0,1] in request 2; [0,1,3] in request 4
    EXPECT_EQ(s.unique_prefixes, 7u);  // [0] [0,1] [0,1,2] [0,1,3] [9] [9,1] [0,1,3,5]
    EXPECT_EQ(s.unique_ids, 6u);       // 0 1 2 3 5 9: id 1 after 9 is a new prefix, not a new id
    EXPECT_DOUBLE_EQ(s.reuse_ratio, 5.0 / 12.0);
    EXPECT_EQ(s.sharing.fresh, 2u);       // requests 1 and 3
    EXPECT_EQ(s.sharing.branching, 1u);   // request 2 shares 2 of request 1's 3 blocks
    EXPECT_EQ(s.sharing.continuing, 1u);  // request 4 extends request 2 by one block
    EXPECT_EQ(s.sharing.continue_distance.max(), 2u);
    EXPECT_EQ(s.arrival_gap_ns.max(), 4'000'000'000u);
}

// Proves: the printed p50 and p99 are nearest-rank (rank ceil(p * n)), where they took the value
// one rank above it, and above 15 they are a bucket's upper bound, at most 12.5 % high.
TEST(LogHistogramQuantile, NearestRankFromTheBuckets) {
    LogHistogram four;
    for (std::uint64_t v : {1, 2, 3, 4}) four.add(v);
    EXPECT_EQ(four.quantile(0.5), 2u);
    EXPECT_EQ(four.quantile(0.99), 4u);
    LogHistogram tail;
    for (int i = 0; i < 99; ++i) tail.add(1);
    tail.add(7);
    EXPECT_EQ(tail.quantile(0.99), 1u);
    EXPECT_EQ(tail.quantile(1.0), 7u);
    LogHistogram wide;
    for (std::uint64_t v = 1; v <= 1000; ++v) wide.add(v);
    const std::uint64_t p50 = wide.quantile(0.5);
    EXPECT_GE(p50, 500u);
    EXPECT_LE(static_cast<double>(p50), 500 * 1.125);
    EXPECT_EQ(wide.quantile(0.999), 1000u);  // clamped to the largest value
}

// Proves: the public conversation trace has the figures its README states (12,031 requests,
// 36.6% block reuse), and the Azure files read in full.
TEST_F(Workload, RealTraceFigures) {
    const std::string conversation = real_trace("mooncake/conversation_trace.jsonl");
    if (conversation.empty()) GTEST_SKIP() << "public traces not present (run tools/fetch-traces)";
    const TraceStats s = compute_trace_stats(conversation, TraceOptions{});
    EXPECT_EQ(s.requests, 12031u);
    EXPECT_NEAR(s.reuse_ratio, 0.366, 0.0005);
    EXPECT_NEAR(s.span_s, 3537.0, 0.5);
    EXPECT_NEAR(s.input_length.mean(), 12035, 1);
    const std::string conv = real_trace("azure_llm_2023/AzureLLMInferenceTrace_conv.csv");
    if (conv.empty()) return;
    const TraceStats a = compute_trace_stats(conv, azure());
    EXPECT_EQ(a.requests, 19366u);
    EXPECT_NEAR(a.input_length.mean(), 1155, 1);
}

std::string synthesize(const TraceStats& fitted, std::uint64_t seed, std::uint64_t requests, const std::string& path,
                       std::uint32_t block_tokens = 0) {
    TraceSynthesizer synthesizer(fitted, {.seed = seed, .block_tokens = block_tokens});
    TraceWriter writer(path);
    TraceRecord record;
    for (std::uint64_t i = 0; i < requests; ++i) {
        synthesizer.next(record);
        writer.write(record);
    }
    writer.finish();
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
}

// Proves: synth is deterministic (same seed, same bytes; another seed, other bytes), its output
// reads back as Mooncake, leaves no temporary file, and roughly keeps the fitted statistics.
TEST_F(Workload, SynthIsDeterministicAndFitted) {
    const std::string source = std::string(KVCHECK_SOURCE_DIR) + "/traces/synth/conversation-small.jsonl";
    const TraceStats fitted = compute_trace_stats(source, TraceOptions{});
    const std::string a = synthesize(fitted, 5, 3000, (dir_ / "a.jsonl").string());
    const std::string b = synthesize(fitted, 5, 3000, (dir_ / "b.jsonl").string());
    const std::string c = synthesize(fitted, 6, 3000, (dir_ / "c.jsonl").string());
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    for (const auto& entry : fs::directory_iterator(dir_))
        EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
    const TraceStats s = compute_trace_stats((dir_ / "a.jsonl").string(), TraceOptions{});
    EXPECT_EQ(s.requests, 3000u);
    EXPECT_NEAR(s.reuse_ratio, fitted.reuse_ratio, 0.1);
    EXPECT_NEAR(s.input_length.mean(), fitted.input_length.mean(), 0.3 * fitted.input_length.mean());
    EXPECT_NEAR(s.arrival_gap_ns.mean(), fitted.arrival_gap_ns.mean(), 0.3 * fitted.arrival_gap_ns.mean());
    EXPECT_LE(s.input_length.max(), fitted.input_length.max());

    // A smaller output block size keeps the block structure: the same ids, shorter prompts.
    synthesize(fitted, 5, 3000, (dir_ / "toy.jsonl").string(), 16);
    const auto toy = read_all((dir_ / "toy.jsonl").string(), jsonl(TimeUnit::ms, 16));
    const auto big = read_all((dir_ / "a.jsonl").string(), TraceOptions{});
    ASSERT_EQ(toy.size(), big.size());
    for (std::size_t i = 0; i < toy.size(); ++i) ASSERT_EQ(toy[i].block_ids, big[i].block_ids);
}

// Proves: every synthesized prompt has at least one token, as the readers require, even when a
// continuing request draws no new tokens and its parent has no whole block (short prompts are
// most of this source, and one continuation in it adds nothing to its parent).
TEST_F(Workload, SynthNeverWritesAnEmptyPrompt) {
    std::string lines = R"({"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]})"
                        "\n"
                        R"({"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]})"
                        "\n";
    for (int i = 0; i < 20; ++i)
        lines += R"({"timestamp": )" + std::to_string(2 + i) +
                 R"(, "input_length": 100, "output_length": 1, "hash_ids": [)" + std::to_string(10 + i) + "]}\n";
    const TraceStats fitted = compute_trace_stats(write("short.jsonl", lines), TraceOptions{});
    ASSERT_EQ(fitted.sharing.continuing, 1u);
    const std::string out = (dir_ / "out.jsonl").string();
    synthesize(fitted, 1, 5000, out);
    const auto records = read_all(out, TraceOptions{});  // throws on a 0-token prompt
    ASSERT_EQ(records.size(), 5000u);
    for (const TraceRecord& r : records) ASSERT_GE(r.input_tokens, 1u) << "line " << r.line;
}

// Proves: a synthetic trace never spans more than a reader accepts (10^9 s): with a source whose
// one gap is that long, the third request is refused with the option to change, where the clock
// used to run past the bound and then wrap, writing a trace that went back in time (exit 0).
TEST_F(Workload, SynthRefusesToSpanMoreThanAReaderAccepts) {
    const std::string far =
        write("far.jsonl", R"({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]})"
                           "\n"
                           R"({"timestamp": 1000000000000, "input_length": 5, "output_length": 1, "hash_ids": [2]})"
                           "\n");
    const TraceStats fitted = compute_trace_stats(far, TraceOptions{});
    const std::string out = (dir_ / "far-out.jsonl").string();
    try {
        synthesize(fitted, 3, 30, out);
        FAIL() << "a synthetic trace past 10^9 s was written";
    } catch (const InputError& e) {
        EXPECT_EQ(e.place(), "--requests");
        EXPECT_NE(e.message().find("would arrive more than 1000000000 s after the first"), std::string::npos)
            << e.what();
    }
    EXPECT_FALSE(fs::exists(out)) << "a refused synthesis leaves no file";
    synthesize(fitted, 3, 2, out);  // two requests fit: one gap of at most the bound
    EXPECT_EQ(read_all(out, TraceOptions{}).size(), 2u);
}
// Proves: on the full conversation trace the synthesizer reproduces its reuse ratio closely.
TEST_F(Workload, SynthMatchesConversationTrace) {
    const std::string conversation = real_trace("mooncake/conversation_trace.jsonl");
    if (conversation.empty()) GTEST_SKIP() << "public traces not present (run tools/fetch-traces)";
    const TraceStats fitted = compute_trace_stats(conversation, TraceOptions{});
    synthesize(fitted, 1, 12031, (dir_ / "s.jsonl").string());
    const TraceStats s = compute_trace_stats((dir_ / "s.jsonl").string(), TraceOptions{});
    EXPECT_NEAR(s.reuse_ratio, fitted.reuse_ratio, 0.03);
    EXPECT_NEAR(s.input_length.mean(), fitted.input_length.mean(), 0.1 * fitted.input_length.mean());
}

std::uint64_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::uint64_t pages = 0;
    std::uint64_t resident = 0;
    statm >> pages >> resident;
    return resident * 4096;
}

// Proves: the reader streams: 200,000 lines (about 20 MB) read in full while resident memory
// grows far less than the file, so no line or record is kept.
TEST_F(Workload, ReaderStreamsLongTraces) {
    const std::string path = (dir_ / "long.jsonl").string();
    {
        std::ofstream out(path, std::ios::binary);
        for (int i = 0; i < 200'000; ++i)
            out << "{\"timestamp\": " << i << ", \"input_length\": 4000, \"output_length\": 1, \"hash_ids\": "
                << "[1000001, 1000002, 1000003, 1000004, 1000005, 1000006, 1000007, 1000008]}\n";
    }
    const std::uint64_t before = resident_bytes();
    const auto reader = TraceReader::open(path, TraceOptions{});
    TraceRecord record;
    std::uint64_t count = 0;
    while (reader->next(record)) ++count;
    EXPECT_EQ(count, 200'000u);
    EXPECT_EQ(record.arrival_ns, 199'999'000'000u);
    if (before != 0) {
        EXPECT_LT(resident_bytes(), before + (8u << 20)) << "memory grew with the trace";
    }
}

// Proves: TraceWriter writes Mooncake's own line layout, which reads back unchanged.
TEST_F(Workload, WriterLineFormat) {
    TraceRecord record;
    record.arrival_ns = 2'999'999;
    record.input_tokens = 600;
    record.output_tokens = 5;
    record.block_ids = {7, 8};
    std::string line;
    append_mooncake_line(line, record);
    EXPECT_EQ(line, "{\"timestamp\": 2, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [7, 8]}\n");
}

int run(const std::string& command) {
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Proves: `kvcheck trace stats` prints the JSON keys, and bad input exits 2 with one line naming
// file, line and column.
TEST_F(Workload, TraceCommand) {
    const std::string good =
        write("g.jsonl", "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n");
    const std::string bad =
        write("b.jsonl", "{\"timestamp\": 0, \"input_length\": -1, \"output_length\": 1, \"hash_ids\": [1]}\n");
    const std::string out = (dir_ / "out.txt").string();
    const std::string err = (dir_ / "err.txt").string();
    ASSERT_EQ(run(std::string(KVCHECK_BINARY) + " trace stats --json " + good + " >" + out + " 2>" + err), 0);
    nlohmann::json stats;
    std::ifstream(out) >> stats;
    for (const char* key :
         {"requests", "span_s", "input_tokens", "output_tokens", "unique_prefixes", "unique_ids", "reuse_ratio"})
        EXPECT_TRUE(stats.contains(key)) << key;
    EXPECT_EQ(stats["requests"], 1);
    EXPECT_EQ(run(std::string(KVCHECK_BINARY) + " trace stats " + bad + " >" + out + " 2>" + err), 2);
    std::ifstream in(err);
    std::string first;
    std::string second;
    std::getline(in, first);
    EXPECT_FALSE(std::getline(in, second)) << "one line only";
    EXPECT_EQ(first.rfind("kvcheck: " + bad + ":1:34: expected an unsigned integer", 0), 0u) << first;
}

// Proves: `trace synth` and `convert` of a source with 16-token blocks write 16-token blocks and
// say how to read the file back (a Mooncake reader, at 512 tokens a block, refuses it); at
// Mooncake's 512 they say nothing of it.
TEST_F(Workload, SynthAndConvertSayHowToReadOtherBlockSizesBack) {
    const std::string source =
        write("s16.jsonl", "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 2, \"hash_ids\": [1, 2, 3]}\n"
                           "{\"timestamp\": 5, \"input_length\": 40, \"output_length\": 2, \"hash_ids\": [1, 2, 4]}\n");
    const std::string err = (dir_ / "err.txt").string();
    const std::string written = (dir_ / "written.jsonl").string();
    const auto stderr_of = [&](const std::string& command) {
        EXPECT_EQ(run(std::string(KVCHECK_BINARY) + " " + command + " 2>" + err), 0) << command;
        std::ifstream in(err);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string hint = "; read it back with --format jsonl --block-size 16";
    for (const std::string& command :
         {"trace synth --from " + source + " --format jsonl --block-size 16 --requests 20 --out " + written,
          "trace convert " + source + " --format jsonl --block-size 16 --out " + written}) {
        const std::string said = stderr_of(command);
        EXPECT_NE(said.find(hint), std::string::npos) << said;
        // Read at Mooncake's 512 the id counts disagree: loaded with a warning, refused when strict.
        EXPECT_NE(stderr_of("trace stats " + written).find("hash_ids count other than ceil(input_length / 512)"),
                  std::string::npos);
        EXPECT_EQ(
            run(std::string(KVCHECK_BINARY) + " trace stats --hash-id-count strict " + written + " >/dev/null 2>&1"),
            2);
        EXPECT_EQ(run(std::string(KVCHECK_BINARY) + " trace stats --format jsonl --block-size 16 " + written +
                      " >/dev/null 2>&1"),
                  0);
    }
    EXPECT_EQ(stderr_of("trace synth --from " + source +
                        " --format jsonl --block-size 16 --requests 20 --out-block-size 512 --out " + written)
                  .find("read it back"),
              std::string::npos);
}

// A trace of every shape of id count against 4-token blocks: more ids than blocks (line 1), fewer
// (2), repeated ids (3) and ids reused at other positions (4), both with the right count, and
// none at all (5).
constexpr const char* kMismatchedTrace =
    "{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4]}\n"
    "{\"timestamp\": 1, \"input_length\": 12, \"output_length\": 1, \"hash_ids\": [1]}\n"
    "{\"timestamp\": 2, \"input_length\": 12, \"output_length\": 1, \"hash_ids\": [7, 7, 7]}\n"
    "{\"timestamp\": 3, \"input_length\": 8, \"output_length\": 1, \"hash_ids\": [2, 1]}\n"
    "{\"timestamp\": 4, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": []}\n";

TraceOptions with_rule(IdCountRule rule) {
    TraceOptions options = jsonl(TimeUnit::ms, 4);
    options.id_count = rule;
    return options;
}

// Proves: trust-length keeps every length, drops the ids past the last block and gives a missing
// block an id no other block has (so it cannot hit), the same on every read; repeated and
// non-chained ids with the right count pass untouched; the summary counts the lines that
// disagreed and names the first ones.
TEST_F(Workload, TrustLengthKeepsLengthsAndNeverInventsReuse) {
    const std::string path = write("m.jsonl", kMismatchedTrace);
    const std::unique_ptr<TraceReader> reader = TraceReader::open(path, with_rule(IdCountRule::trust_length));
    std::vector<TraceRecord> records;
    for (TraceRecord record; reader->next(record);) records.push_back(record);
    ASSERT_EQ(records.size(), 5u);
    EXPECT_EQ(records[0].block_ids, (std::vector<std::uint64_t>{1, 2}));
    EXPECT_EQ(records[0].input_tokens, 8u);
    ASSERT_EQ(records[1].block_ids.size(), 3u);
    EXPECT_EQ(records[1].block_ids[0], 1u);
    EXPECT_EQ(records[2].block_ids, (std::vector<std::uint64_t>{7, 7, 7}));
    EXPECT_EQ(records[3].block_ids, (std::vector<std::uint64_t>{2, 1}));
    ASSERT_EQ(records[4].block_ids.size(), 2u);
    std::set<std::uint64_t> made_up = {records[1].block_ids[1], records[1].block_ids[2], records[4].block_ids[0],
                                       records[4].block_ids[1]};
    EXPECT_EQ(made_up.size(), 4u);
    for (const std::uint64_t id : {1, 2, 3, 4, 7}) EXPECT_EQ(made_up.count(id), 0u) << id;
    EXPECT_EQ(read_all(path, with_rule(IdCountRule::trust_length))[1].block_ids, records[1].block_ids);

    const IdCountMismatches& m = reader->id_count_mismatches();
    EXPECT_EQ(m.lines, 3u);
    EXPECT_EQ(m.lines_read, 5u);
    EXPECT_EQ(m.more_ids, 1u);
    EXPECT_EQ(m.ids_dropped, 2u);
    EXPECT_EQ(m.blocks_filled, 4u);
    EXPECT_EQ(m.first_lines, (std::vector<std::uint64_t>{1, 2, 5}));
    const std::string warning = id_count_warning(path, m);
    for (const char* part : {"3 of 5 lines", "ceil(input_length / 4)", "1 with more ids, 2 with fewer",
                             "lines 1, 2, 5)", "2 ids past the last block dropped, 4 blocks given ids of their own"})
        EXPECT_NE(warning.find(part), std::string::npos) << part << " in " << warning;
    EXPECT_EQ(warning.rfind(path + ": ", 0), 0u) << warning;

    // The statistics see request 2 share block [1] with request 1 and nothing after it.
    const TraceStats stats = compute_trace_stats(path, with_rule(IdCountRule::trust_length));
    EXPECT_EQ(stats.reused_blocks, 1u);
    EXPECT_EQ(stats.id_counts.lines, 3u);
}

// Proves: keep-ids keeps every id and moves each length to the nearest one the ids fit; a line
// without ids is refused there, at its hash_ids; strict refuses the first line that disagrees.
TEST_F(Workload, KeepIdsAndStrictRules) {
    const std::string text = kMismatchedTrace;
    const std::string four_lines = write("k.jsonl", text.substr(0, text.rfind("{\"timestamp\": 4")));
    const std::vector<TraceRecord> kept = read_all(four_lines, with_rule(IdCountRule::keep_ids));
    ASSERT_EQ(kept.size(), 4u);
    EXPECT_EQ(kept[0].block_ids, (std::vector<std::uint64_t>{1, 2, 3, 4}));
    EXPECT_EQ(kept[0].input_tokens, 13u);  // 8 tokens raised to the least that fills 4 blocks
    EXPECT_EQ(kept[1].block_ids, (std::vector<std::uint64_t>{1}));
    EXPECT_EQ(kept[1].input_tokens, 4u);  // 12 tokens cut to one block
    EXPECT_EQ(kept[2].input_tokens, 12u);

    const std::string all = write("a.jsonl", text);
    const auto refused_at = [&](IdCountRule rule) {
        try {
            read_all(all, with_rule(rule));
        } catch (const InputError& e) {
            return e.place() + " " + e.message();
        }
        return std::string("no error");
    };
    const std::string keep = refused_at(IdCountRule::keep_ids);
    EXPECT_EQ(keep.rfind("5:69 expected 2 hash ids for input_length 5", 0), 0u) << keep;
    EXPECT_NE(keep.find("there are none"), std::string::npos) << keep;
    const std::string strict = refused_at(IdCountRule::strict);
    EXPECT_EQ(strict.rfind("1:69 expected 2 hash ids for input_length 8 at 4 tokens per block, got 4", 0), 0u)
        << strict;
    EXPECT_NE(strict.find("trust-length or keep-ids"), std::string::npos) << strict;
}

// Proves: a scenario run over a trace whose counts disagree on most lines loads by default and
// says so in report.json's warnings; with hash_id_count strict the run is refused at the line.
TEST_F(Workload, RunWarnsOfDisagreeingIdCounts) {
    std::string trace;
    for (int i = 0; i < 20; ++i)
        trace += "{\"timestamp\": " + std::to_string(i) +
                 ", \"input_length\": 64, \"output_length\": 1, \"hash_ids\": [" +
                 (i % 4 == 0 ? "1, 2, 3, 4" : "1, 2, 3") + "]}\n";  // 4 ids of 16 tokens on 5 lines, 3 on 15
    write("t.jsonl", trace);
    const auto scenario = [&](const std::string& rule) {
        return write("s-" + rule + ".json", R"({"model": "toy", "workload": {"trace": "t.jsonl", "format": "jsonl",
                     "block_size": 16, "hash_id_count": ")" +
                                                rule + R"("}})");
    };
    const std::string out = (dir_ / "run").string();
    const std::string err = (dir_ / "err.txt").string();
    ASSERT_EQ(run(std::string(KVCHECK_BINARY) + " run " + scenario("trust-length") + " --out " + out +
                  " >/dev/null 2>" + err),
              0);
    nlohmann::json report;
    std::ifstream(out + "/report.json") >> report;
    std::string said;
    for (const auto& w : report["warnings"])
        if (w["code"] == "trace_hash_ids") said = w["message"];
    EXPECT_NE(said.find("15 of 20 lines"), std::string::npos) << report.dump().substr(0, 400);
    EXPECT_NE(said.find("lines 2, 3, 4, 6, 7, ...)"), std::string::npos) << said;
    EXPECT_EQ(
        run(std::string(KVCHECK_BINARY) + " run " + scenario("strict") + " --out " + out + " >/dev/null 2>" + err), 2);
    std::ifstream in(err);
    const std::string message(std::istreambuf_iterator<char>(in), {});
    EXPECT_NE(message.find("t.jsonl:2:"), std::string::npos) << message;
}

}  // namespace
}  // namespace kvcheck::sim
