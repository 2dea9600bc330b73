// `kvcheck trace stats|synth|convert`: summarise a request trace, generate a fitted synthetic one,
// or rewrite any supported format as Mooncake-style JSONL. Bad input exits 2 with one line.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/workload/stats.hpp"
#include "sim/workload/synth.hpp"
#include "sim/workload/trace.hpp"
#include "sim/workload/trace_writer.hpp"
#include "tools/cli/commands.hpp"

namespace kvcheck::cli {

namespace {

// The flags that say how to read a trace; shared by every trace subcommand.
struct InputFlags {
    std::string path;
    std::string format;     // empty: guessed from the extension
    std::string time_unit;  // empty: the format's default
    std::uint32_t block_tokens = 0;
    std::uint64_t seed = 1;
    std::uint64_t limit = 0;
    std::string id_count = "trust-length";
};

// Written Mooncake JSONL at another block size than Mooncake's is read back as generic JSONL.
std::string read_back_note(std::uint32_t block_tokens) {
    return block_tokens == sim::kMooncakeBlockTokens
               ? ""
               : "; read it back with --format jsonl --block-size " + std::to_string(block_tokens);
}

void add_reading_flags(CLI::App* cmd, InputFlags& flags) {
    cmd->add_option("--format", flags.format, "Trace format (default: azure for .csv, else mooncake)")
        ->check(CLI::IsMember({"mooncake", "azure", "jsonl"}));
    cmd->add_option("--time-unit", flags.time_unit, "jsonl: unit of the timestamps (default ms)")
        ->check(CLI::IsMember({"s", "ms", "us", "ns"}));
    cmd->add_option("--block-size", flags.block_tokens, "jsonl and azure: tokens per block (default 512)")
        ->check(CLI::Range(1u, sim::kBlockTokensMax));
    cmd->add_option("--seed", flags.seed, "Seed of the Azure prefix-sharing model (synth: also of the generator)");
    cmd->add_option("--limit", flags.limit, "Read only the first N requests (0: all)");
    cmd->add_option("--hash-id-count", flags.id_count,
                    "jsonl and mooncake: a line whose hash_ids count is not ceil(input_length / block size): "
                    "trust-length (default), keep-ids or strict (refuse it)")
        ->check(CLI::IsMember({"trust-length", "keep-ids", "strict"}));
}

sim::TraceOptions trace_options(const InputFlags& flags) {
    sim::TraceOptions options;
    options.format = flags.format.empty() ? sim::guess_trace_format(flags.path) : sim::parse_trace_format(flags.format);
    if (!flags.time_unit.empty()) options.time_unit = sim::parse_time_unit(flags.time_unit);
    if (flags.block_tokens != 0) options.block_tokens = flags.block_tokens;
    options.seed = flags.seed;
    options.limit = flags.limit;
    options.id_count = sim::parse_id_count_rule(flags.id_count);
    return options;
}

// On stderr, so that --json and written traces stay clean.
void warn_id_counts(const std::string& path, const sim::IdCountMismatches& mismatches) {
    if (const std::string text = sim::id_count_warning(path, mismatches); !text.empty())
        std::fprintf(stderr, "warning: %s\n", text.c_str());
}

nlohmann::json stats_json(const sim::TraceStats& s, const sim::TraceOptions& options) {
    return {{"requests", s.requests},
            {"span_s", s.span_s},
            {"input_tokens", s.input_tokens},
            {"output_tokens", s.output_tokens},
            {"unique_prefixes", s.unique_prefixes},
            {"unique_ids", s.unique_ids},
            {"hash_id_count", sim::id_count_rule_name(options.id_count)},
            {"hash_id_count_mismatches", s.id_counts.lines},
            {"reuse_ratio", s.reuse_ratio},
            {"format", sim::trace_format_name(options.format)},
            {"block_tokens", s.block_tokens},
            {"block_references", s.block_references},
            {"reused_blocks", s.reused_blocks},
            {"input_tokens_mean", s.input_length.mean()},
            {"input_tokens_max", s.input_length.max()},
            {"output_tokens_mean", s.output_length.mean()},
            {"output_tokens_max", s.output_length.max()},
            {"arrival_gap_ms_mean", s.arrival_gap_ns.mean() / 1e6},
            {"sharing",
             {{"fresh", s.sharing.fresh}, {"continuing", s.sharing.continuing}, {"branching", s.sharing.branching}}},
            {"session_turns", s.session_turns}};
}

void print_stats(const sim::TraceStats& s, const InputFlags& flags, const sim::TraceOptions& options) {
    std::printf("trace          %s (%s, %u-token blocks", flags.path.c_str(),
                std::string(sim::trace_format_name(options.format)).c_str(), s.block_tokens);
    if (options.format == sim::TraceFormat::azure)
        std::printf(", ids from the sharing model, seed=%llu", static_cast<unsigned long long>(options.seed));
    std::printf(")\n");
    std::printf("requests       %llu\n", static_cast<unsigned long long>(s.requests));
    std::printf("span_s         %.3f\n", s.span_s);
    std::printf("input_tokens   %llu (mean %.0f, p50 %llu, p99 %llu, max %llu)\n",
                static_cast<unsigned long long>(s.input_tokens), s.input_length.mean(),
                static_cast<unsigned long long>(s.input_length.quantile(0.5)),
                static_cast<unsigned long long>(s.input_length.quantile(0.99)),
                static_cast<unsigned long long>(s.input_length.max()));
    std::printf("output_tokens  %llu (mean %.0f, p50 %llu, p99 %llu, max %llu)\n",
                static_cast<unsigned long long>(s.output_tokens), s.output_length.mean(),
                static_cast<unsigned long long>(s.output_length.quantile(0.5)),
                static_cast<unsigned long long>(s.output_length.quantile(0.99)),
                static_cast<unsigned long long>(s.output_length.max()));
    std::printf("arrival gaps   mean %.1f ms, p50 %.1f ms, p99 %.1f ms\n", s.arrival_gap_ns.mean() / 1e6,
                static_cast<double>(s.arrival_gap_ns.quantile(0.5)) / 1e6,
                static_cast<double>(s.arrival_gap_ns.quantile(0.99)) / 1e6);
    std::printf("blocks         %llu references, %llu unique prefixes (chained ids 0..i), %llu unique ids\n",
                static_cast<unsigned long long>(s.block_references), static_cast<unsigned long long>(s.unique_prefixes),
                static_cast<unsigned long long>(s.unique_ids));
    std::printf("reuse_ratio    %.4f (%.1f%% of block references repeat an earlier block)\n", s.reuse_ratio,
                100.0 * s.reuse_ratio);
    std::printf("sharing        fresh %llu, continuing %llu, branching %llu\n",
                static_cast<unsigned long long>(s.sharing.fresh), static_cast<unsigned long long>(s.sharing.continuing),
                static_cast<unsigned long long>(s.sharing.branching));
    std::printf("session turns  %llu (requests workload.sessions replays as the next turn of an earlier one)\n",
                static_cast<unsigned long long>(s.session_turns));
}

void register_stats(CLI::App& trace, Common& common) {
    auto* cmd =
        trace.add_subcommand("stats", "Requests, time span, token totals, unique blocks and reuse ratio of a trace");
    auto flags = std::make_shared<InputFlags>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("FILE", flags->path, "Trace file")->required();
    add_reading_flags(cmd, *flags);
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->callback([flags, json, &common] {
        const sim::TraceOptions options = trace_options(*flags);
        const sim::TraceStats stats = sim::compute_trace_stats(flags->path, options);
        warn_id_counts(flags->path, stats.id_counts);
        if (*json)
            std::cout << stats_json(stats, options).dump(2) << "\n";
        else
            print_stats(stats, *flags, options);
        common.exit_code = 0;
    });
}

void register_synth(CLI::App& trace, Common& common) {
    auto* cmd =
        trace.add_subcommand("synth", "Generate a seeded synthetic trace fitted to a real one (Mooncake JSONL)");
    auto flags = std::make_shared<InputFlags>();
    auto requests = std::make_shared<std::uint64_t>(0);
    auto out_block_tokens = std::make_shared<std::uint32_t>(0);
    auto out = std::make_shared<std::string>();
    cmd->add_option("--from", flags->path, "Trace to fit the generator to")->required();
    add_reading_flags(cmd, *flags);
    cmd->add_option("--requests", *requests, "Number of requests to generate")
        ->required()
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100'000'000}));
    cmd->add_option("--out-block-size", *out_block_tokens,
                    "Tokens per block in the output; all token counts scale with it (default: the source's)")
        ->check(CLI::Range(1u, sim::kBlockTokensMax));
    cmd->add_option("--out", *out, "Output file, written atomically (default: stdout)");
    cmd->callback([flags, requests, out_block_tokens, out, &common] {
        const sim::TraceOptions options = trace_options(*flags);
        const sim::TraceStats fitted = sim::compute_trace_stats(flags->path, options);
        warn_id_counts(flags->path, fitted.id_counts);
        sim::TraceSynthesizer synthesizer(fitted, {.seed = flags->seed, .block_tokens = *out_block_tokens});
        sim::TraceWriter writer(*out, flags->path);
        sim::TraceRecord record;
        for (std::uint64_t i = 0; i < *requests; ++i) {
            synthesizer.next(record);
            writer.write(record);
        }
        writer.finish();
        const std::uint32_t written_block = *out_block_tokens != 0 ? *out_block_tokens : options.block_tokens;
        std::fprintf(stderr,
                     "kvcheck trace synth: seed=%llu requests=%llu fitted to %s (%llu requests, reuse %.4f)%s%s%s\n",
                     static_cast<unsigned long long>(flags->seed), static_cast<unsigned long long>(*requests),
                     flags->path.c_str(), static_cast<unsigned long long>(fitted.requests), fitted.reuse_ratio,
                     out->empty() ? "" : " -> ", out->c_str(), read_back_note(written_block).c_str());
        common.exit_code = 0;
    });
}

void register_convert(CLI::App& trace, Common& common) {
    auto* cmd = trace.add_subcommand("convert", "Rewrite any supported trace as Mooncake-style JSONL");
    auto flags = std::make_shared<InputFlags>();
    auto out = std::make_shared<std::string>();
    cmd->add_option("FILE", flags->path, "Trace file")->required();
    add_reading_flags(cmd, *flags);
    cmd->add_option("--out", *out, "Output file, written atomically (default: stdout)");
    cmd->callback([flags, out, &common] {
        const sim::TraceOptions options = trace_options(*flags);
        const std::unique_ptr<sim::TraceReader> reader = sim::TraceReader::open(flags->path, options);
        sim::TraceWriter writer(*out, flags->path);
        sim::TraceRecord record;
        std::uint64_t count = 0;
        while (reader->next(record)) {
            writer.write(record);
            ++count;
        }
        writer.finish();
        warn_id_counts(flags->path, reader->id_count_mismatches());
        std::fprintf(stderr, "kvcheck trace convert: %llu requests from %s%s%s (%u-token blocks%s)\n",
                     static_cast<unsigned long long>(count), flags->path.c_str(), out->empty() ? "" : " -> ",
                     out->c_str(), options.block_tokens, read_back_note(options.block_tokens).c_str());
        common.exit_code = 0;
    });
}

}  // namespace

void register_trace(CLI::App& app, Common& common) {
    auto* trace = app.add_subcommand("trace", "Read, summarise, synthesise and convert request traces");
    trace->require_subcommand(1);
    register_stats(*trace, common);
    register_synth(*trace, common);
    register_convert(*trace, common);
}

}  // namespace kvcheck::cli
