// Streaming readers for request traces (Mooncake JSONL, general hash-id JSONL, Azure LLM CSV).
// A reader holds one line at a time, so memory does not grow with the length of the trace.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/workload/sharing.hpp"

namespace kvcheck::sim {

enum class TraceFormat { mooncake, azure, jsonl };
enum class TimeUnit { s, ms, us, ns };
// What a JSONL reader does with a line whose hash_ids count is not ceil(input_length / block
// size), as in traces whose lengths come from another tokenizer than their ids (docs/traces.md
// "Id counts"). trust_length: the length decides the blocks; extra ids are dropped, missing blocks
// get ids no other request holds (so they can only miss). keep_ids: the ids decide; the length is
// moved to the nearest one they fit. strict: the line is refused.
enum class IdCountRule { trust_length, keep_ids, strict };

// Name <-> value; the parse functions throw InputError("", "", ...) naming the accepted names.
std::string_view trace_format_name(TraceFormat format);
TraceFormat parse_trace_format(std::string_view name);
std::string_view time_unit_name(TimeUnit unit);
TimeUnit parse_time_unit(std::string_view name);
std::uint64_t time_unit_ns(TimeUnit unit);
std::string_view id_count_rule_name(IdCountRule rule);  // "trust-length", "keep-ids", "strict"
IdCountRule parse_id_count_rule(std::string_view name);

// The format a path most likely holds when none is named: .csv is Azure, anything else Mooncake.
TraceFormat guess_trace_format(const std::string& path);

inline constexpr std::uint32_t kMooncakeBlockTokens = 512;
inline constexpr std::uint32_t kBlockTokensMax = 1 << 20;     // for every block size a trace or scenario names
inline constexpr std::uint32_t kInputTokensMax = 16'777'216;  // larger prompts are taken as corrupt data
inline constexpr std::uint32_t kOutputTokensMax = 16'777'216;
// The latest arrival after the first request (about 31.7 years; a scenario's at_ms has the same
// bound): the simulated clock, in 64-bit nanoseconds, then cannot wrap.
inline constexpr std::uint64_t kArrivalMaxNs = 1'000'000'000'000'000'000;

struct TraceOptions {
    TraceFormat format = TraceFormat::mooncake;
    TimeUnit time_unit = TimeUnit::ms;                 // jsonl only; Mooncake is always ms
    std::uint32_t block_tokens = 512;                  // jsonl and azure; Mooncake is always 512
    std::uint64_t seed = 1;                            // azure: seeds the prefix-sharing model
    std::uint64_t limit = 0;                           // read at most this many requests; 0 reads all
    IdCountRule id_count = IdCountRule::trust_length;  // jsonl and mooncake
    AzureSharing sharing;                              // azure only
};

// Why a trace cannot be read with these options, before reading it: Mooncake traces are always
// ms and 512-token blocks, Azure traces carry date-times (no time unit). `option` is the scenario
// key at fault ("block_size", "time_unit"); both are empty when the options are fine.
struct TraceOptionsProblem {
    std::string option;
    std::string why;
};
TraceOptionsProblem trace_options_problem(const TraceOptions& options);

// One request. arrival_ns is relative to the first request of the trace, which arrives at 0.
struct TraceRecord {
    std::uint64_t arrival_ns = 0;
    std::uint32_t input_tokens = 0;
    std::uint32_t output_tokens = 0;
    std::uint32_t block_tokens = 0;
    std::vector<std::uint64_t> block_ids;  // ceil(input_tokens / block_tokens) content-block ids
    std::uint64_t line = 0;                // 1-based line in the file, for messages
};

// The lines whose hash_ids count disagreed with their input_length, and what was done about it.
struct IdCountMismatches {
    static constexpr std::size_t kShownLines = 5;
    std::uint64_t lines = 0;                 // lines that disagreed
    std::uint64_t lines_read = 0;            // lines read in all
    std::uint64_t more_ids = 0;              // of the disagreeing lines, those with more ids than blocks
    std::uint64_t ids_dropped = 0;           // trust_length: ids past the last block
    std::uint64_t blocks_filled = 0;         // trust_length: blocks given an id of their own
    std::uint64_t tokens_moved = 0;          // keep_ids: |new length - old length|, summed
    std::vector<std::uint64_t> first_lines;  // the first kShownLines of them
    IdCountRule rule = IdCountRule::trust_length;
    std::uint32_t block_tokens = 0;
};

// One line for a run's warnings and `trace` commands: how many lines disagreed, the first few,
// what the rule did and how to choose another. Empty when no line disagreed.
std::string id_count_warning(const std::string& path, const IdCountMismatches& mismatches);

// Reads lines with a buffered stream, one at a time. Strips a UTF-8 BOM on line 1 and a trailing
// CR, and remembers how many bytes the BOM took so that columns count the file's own bytes.
class LineSource {
public:
    explicit LineSource(const std::string& path);
    bool next_line();  // false at the end of the file
    const std::string& text() const { return text_; }
    std::uint64_t number() const { return number_; }
    std::size_t column_offset() const { return number_ == 1 ? bom_bytes_ : 0; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::ifstream in_;
    std::string text_;
    std::uint64_t number_ = 0;
    std::size_t bom_bytes_ = 0;
};

// The common front of every format: the request limit, times made relative to the first request,
// the check that arrivals never go back, and the "no requests" error for an empty trace.
class TraceReader {
public:
    // Throws InputError for a missing file, a folder, or options the format does not allow.
    static std::unique_ptr<TraceReader> open(const std::string& path, const TraceOptions& options);
    virtual ~TraceReader() = default;
    TraceReader(const TraceReader&) = delete;
    TraceReader& operator=(const TraceReader&) = delete;

    // Fills `out` with the next request and returns true; false after the last one (or the limit).
    // Throws InputError(path, "LINE:COL" or "LINE", message) on the first bad line.
    bool next(TraceRecord& out);

    const TraceOptions& options() const { return options_; }
    const std::string& path() const { return lines_.path(); }
    const IdCountMismatches& id_count_mismatches() const { return mismatches_; }

protected:
    TraceReader(const std::string& path, const TraceOptions& options);

    // Reads the next record with an absolute arrival time; false at the end of the file.
    virtual bool read_record(TraceRecord& out) = 0;

    // Turns an absolute time into one relative to the first request, rejecting a step back;
    // `column()` (0-based index into text()) is where the time stands, asked only for the message.
    template <typename Column>
    std::uint64_t relative_arrival(std::uint64_t absolute_ns, Column column) {
        if (delivered_ == 0) {
            first_ns_ = absolute_ns;
            previous_ns_ = absolute_ns;
        }
        if (absolute_ns < previous_ns_) arrival_goes_back(absolute_ns, column());
        if (absolute_ns - first_ns_ > kArrivalMaxNs) arrival_too_late(absolute_ns, column());
        previous_ns_ = absolute_ns;
        return absolute_ns - first_ns_;
    }

    // "LINE:COL" for the current line, counting the column (0-based index into text()) in file bytes.
    std::string place(std::size_t index) const;
    std::string line_place() const { return std::to_string(lines_.number()); }
    // Throws InputError at the first byte of the current line that is not UTF-8, or, for a JSON
    // line, a NUL byte (kNulInJson).
    void check_utf8(bool json_line = false) const;
    // Applies options_.id_count to a record whose block_ids came from the line as written and
    // whose count is not the one its input_length needs;
    // `ids_column` (0-based index into text()) is where its hash_ids stand, for messages. Throws
    // InputError under strict, and where keep_ids can find no length that fits.
    void reconcile_id_count(TraceRecord& record, std::size_t ids_column);
    // "; if the timestamps are in a finer unit ..., name it (...)", for messages on times too large.
    std::string finer_unit_hint() const;

    LineSource lines_;
    TraceOptions options_;
    IdCountMismatches mismatches_;

private:
    [[noreturn]] void arrival_goes_back(std::uint64_t absolute_ns, std::size_t column) const;
    [[noreturn]] void arrival_too_late(std::uint64_t absolute_ns, std::size_t column) const;

    std::uint64_t delivered_ = 0;
    std::uint64_t first_ns_ = 0;
    std::uint64_t previous_ns_ = 0;
};

// The requests a run arrives with, in its order: a trace's records, streamed, merged with an
// explicit list by arrival time (a trace record first on equal times). The simulator replays
// them; the shrinker (sim/shrink.hpp) collects them.
class ArrivalStream {
public:
    // `trace_path` may be empty (the explicit list alone); `requests` must outlive the stream.
    ArrivalStream(const std::string& trace_path, const TraceOptions& options, const std::vector<TraceRecord>& requests);
    bool next(TraceRecord& out);  // false after the last request of both
    // The trace's id-count warning (id_count_warning), complete once next() returned false.
    std::string id_count_warning() const;

private:
    std::string trace_path_;
    IdCountMismatches mismatches_;  // the reader's, kept when it is closed at the trace's end
    std::unique_ptr<TraceReader> reader_;
    std::optional<TraceRecord> pending_;
    const std::vector<TraceRecord>& requests_;
    std::size_t next_request_ = 0;
};

// The offset of the first byte that is not part of valid UTF-8, or npos when all of it is valid.
// With `sequence`, also where the broken sequence starts (the same offset for a lone bad byte).
// With `nul_is_invalid`, a NUL byte counts as invalid too.
std::size_t find_invalid_utf8(std::string_view text, std::size_t* sequence = nullptr, bool nul_is_invalid = false);

// Parses a UTC wall-clock time "YYYY-MM-DD HH:MM:SS[.fraction]" (up to 9 fraction digits, years
// 1970..2500, 'T' also accepted as the separator) into ns since 1970-01-01; nullopt when malformed.
std::optional<std::uint64_t> parse_wall_clock_ns(std::string_view text);

// The number of blocks a prompt fills: ceil(input_tokens / block_tokens).
inline std::uint32_t blocks_for(std::uint32_t input_tokens, std::uint32_t block_tokens) {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(input_tokens) + block_tokens - 1) / block_tokens);
}

}  // namespace kvcheck::sim
