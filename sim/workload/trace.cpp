// The format-independent half of the trace readers: names, opening and checking the file, line
// reading, relative arrival times and UTF-8 validation.
#include "sim/workload/trace.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "model/core.hpp"
#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"
#include "sim/workload/readers.hpp"

namespace kvcheck::sim {

std::string_view trace_format_name(TraceFormat format) {
    switch (format) {
        case TraceFormat::mooncake: return "mooncake";
        case TraceFormat::azure: return "azure";
        case TraceFormat::jsonl: return "jsonl";
    }
    KV_UNREACHABLE("unknown trace format");
}

TraceFormat parse_trace_format(std::string_view name) {
    for (TraceFormat f : {TraceFormat::mooncake, TraceFormat::azure, TraceFormat::jsonl})
        if (trace_format_name(f) == name) return f;
    throw InputError("", "", "unknown trace format \"" + std::string(name) + "\", expected mooncake, azure or jsonl");
}

std::string_view time_unit_name(TimeUnit unit) {
    switch (unit) {
        case TimeUnit::s: return "s";
        case TimeUnit::ms: return "ms";
        case TimeUnit::us: return "us";
        case TimeUnit::ns: return "ns";
    }
    KV_UNREACHABLE("unknown time unit");
}

TimeUnit parse_time_unit(std::string_view name) {
    for (TimeUnit u : {TimeUnit::s, TimeUnit::ms, TimeUnit::us, TimeUnit::ns})
        if (time_unit_name(u) == name) return u;
    throw InputError("", "", "unknown time unit \"" + std::string(name) + "\", expected s, ms, us or ns");
}

std::uint64_t time_unit_ns(TimeUnit unit) {
    switch (unit) {
        case TimeUnit::s: return 1'000'000'000;
        case TimeUnit::ms: return 1'000'000;
        case TimeUnit::us: return 1'000;
        case TimeUnit::ns: return 1;
    }
    KV_UNREACHABLE("unknown time unit");
}

std::string_view id_count_rule_name(IdCountRule rule) {
    switch (rule) {
        case IdCountRule::trust_length: return "trust-length";
        case IdCountRule::keep_ids: return "keep-ids";
        case IdCountRule::strict: return "strict";
    }
    KV_UNREACHABLE("unknown id count rule");
}

IdCountRule parse_id_count_rule(std::string_view name) {
    for (IdCountRule r : {IdCountRule::trust_length, IdCountRule::keep_ids, IdCountRule::strict})
        if (id_count_rule_name(r) == name) return r;
    throw InputError(
        "", "", "unknown hash id count rule \"" + std::string(name) + "\", expected trust-length, keep-ids or strict");
}

std::string id_count_warning(const std::string& path, const IdCountMismatches& m) {
    if (m.lines == 0) return "";
    std::string lines;
    for (const std::uint64_t line : m.first_lines) lines += (lines.empty() ? "" : ", ") + std::to_string(line);
    if (m.lines > m.first_lines.size()) lines += ", ...";
    const std::uint64_t fewer = m.lines - m.more_ids;
    std::string text = path + ": " + std::to_string(m.lines) + " of " + std::to_string(m.lines_read) +
                       " lines have a hash_ids count other than ceil(input_length / " + std::to_string(m.block_tokens) +
                       ") (" + std::to_string(m.more_ids) + " with more ids, " + std::to_string(fewer) +
                       " with fewer; lines " + lines + "); ";
    if (m.rule == IdCountRule::trust_length)
        text += "hash_id_count trust-length kept each input_length: " + std::to_string(m.ids_dropped) +
                " ids past the last block dropped, " + std::to_string(m.blocks_filled) +
                " blocks given ids of their own (they can only miss); keep-ids trusts the ids instead, strict "
                "refuses such lines";
    else
        text += "hash_id_count keep-ids moved each input_length to the nearest one its ids fit (" +
                std::to_string(m.tokens_moved) +
                " tokens in all); trust-length trusts the lengths instead, strict "
                "refuses such lines";
    return text + " (docs/traces.md, Id counts)";
}

TraceFormat guess_trace_format(const std::string& path) {
    const std::string extension = std::filesystem::path(path).extension().string();
    return extension == ".csv" || extension == ".CSV" ? TraceFormat::azure : TraceFormat::mooncake;
}

LineSource::LineSource(const std::string& path) : path_(path) {
    require_input_file(path);
    in_.open(path, std::ios::binary);
    if (!in_) throw InputError(path, "", std::string("cannot read: ") + std::strerror(errno));
}

bool LineSource::next_line() {
    if (!std::getline(in_, text_)) {
        if (in_.bad()) throw InputError(path_, std::to_string(number_ + 1), "read failed");
        return false;
    }
    ++number_;
    if (number_ == 1 && text_.starts_with("\xEF\xBB\xBF")) {
        bom_bytes_ = 3;
        text_.erase(0, 3);
    }
    // JSON's parser would skip a byte-order mark at the start of any line; only the file may start with one.
    if (text_.starts_with("\xEF\xBB\xBF"))
        throw InputError(path_, std::to_string(number_) + ":" + std::to_string(number_ == 1 ? 4 : 1),
                         "a byte-order mark (U+FEFF) may only start the file");
    if (!text_.empty() && text_.back() == '\r') text_.pop_back();
    return true;
}

TraceOptionsProblem trace_options_problem(const TraceOptions& options) {
    if (options.block_tokens == 0) return {"block_size", "the block size must be at least 1 token"};
    if (options.format == TraceFormat::mooncake && options.block_tokens != kMooncakeBlockTokens)
        return {"block_size", "Mooncake traces always use 512-token blocks; read other block sizes as format jsonl"};
    if (options.format == TraceFormat::mooncake && options.time_unit != TimeUnit::ms)
        return {"time_unit", "Mooncake traces always use ms; read other time units as format jsonl"};
    if (options.format == TraceFormat::azure && options.time_unit != TimeUnit::ms)
        return {"time_unit",
                "Azure traces carry date-times, so a time unit does not apply to them (it is for format jsonl)"};
    return {};
}

std::unique_ptr<TraceReader> TraceReader::open(const std::string& path, const TraceOptions& options) {
    if (const TraceOptionsProblem problem = trace_options_problem(options); !problem.why.empty())
        throw InputError(path, "", problem.why);
    switch (options.format) {
        case TraceFormat::mooncake:  // Mooncake is JSONL with fixed timestamps and blocks
        case TraceFormat::jsonl: return make_jsonl_reader(path, options);
        case TraceFormat::azure: return make_azure_reader(path, options);
    }
    KV_UNREACHABLE("unknown trace format");
}

TraceReader::TraceReader(const std::string& path, const TraceOptions& options) : lines_(path), options_(options) {
    mismatches_.rule = options.id_count;
    mismatches_.block_tokens = options.block_tokens;
}

void TraceReader::reconcile_id_count(TraceRecord& record, std::size_t ids_column) {
    const std::size_t count = record.block_ids.size();
    const std::uint32_t needed = blocks_for(record.input_tokens, record.block_tokens);
    if (count == needed) return;
    const std::string counts = "expected " + std::to_string(needed) + (needed == 1 ? " hash id" : " hash ids") +
                               " for input_length " + std::to_string(record.input_tokens) + " at " +
                               std::to_string(record.block_tokens) + " tokens per block, got " + std::to_string(count);
    switch (options_.id_count) {
        case IdCountRule::strict:
            throw InputError(
                path(), place(ids_column),
                counts + "; hash_id_count trust-length or keep-ids reads such lines (docs/traces.md, Id counts)");
        case IdCountRule::trust_length:
            if (count > needed) {
                mismatches_.ids_dropped += count - needed;
                record.block_ids.resize(needed);
            } else {
                mismatches_.blocks_filled += needed - count;
                // Salted by the line, these ids are in no other request, so no block can hit through them.
                for (std::size_t b = count; b < needed; ++b)
                    record.block_ids.push_back(hash_combine(hash_combine(0x66726573686964ULL, lines_.number()), b));
            }
            break;
        case IdCountRule::keep_ids: {
            if (count == 0)
                throw InputError(path(), place(ids_column),
                                 counts + "; keep-ids takes the blocks from the ids, and there are none");
            const std::uint64_t lowest = (count - 1) * std::uint64_t{record.block_tokens} + 1;
            if (lowest > kInputTokensMax)
                throw InputError(path(), place(ids_column),
                                 counts + "; keep-ids would make input_length at least " + std::to_string(lowest) +
                                     ", above the most a request may have (" + std::to_string(kInputTokensMax) + ")");
            const std::uint64_t highest =
                std::min<std::uint64_t>(count * std::uint64_t{record.block_tokens}, kInputTokensMax);
            const std::uint64_t length = std::clamp<std::uint64_t>(record.input_tokens, lowest, highest);
            mismatches_.tokens_moved +=
                length > record.input_tokens ? length - record.input_tokens : record.input_tokens - length;
            record.input_tokens = static_cast<std::uint32_t>(length);
            break;
        }
    }
    ++mismatches_.lines;
    if (count > needed) ++mismatches_.more_ids;
    if (mismatches_.first_lines.size() < IdCountMismatches::kShownLines)
        mismatches_.first_lines.push_back(lines_.number());
}

bool TraceReader::next(TraceRecord& out) {
    if (options_.limit != 0 && delivered_ >= options_.limit) return false;
    if (!read_record(out)) {
        if (delivered_ == 0) throw InputError(path(), "", "no requests");
        return false;
    }
    KV_ASSERT(out.block_ids.size() == blocks_for(out.input_tokens, out.block_tokens),
              "a reader must deliver one id per block");
    ++delivered_;
    mismatches_.lines_read = delivered_;
    return true;
}

ArrivalStream::ArrivalStream(const std::string& trace_path, const TraceOptions& options,
                             const std::vector<TraceRecord>& requests)
    : trace_path_(trace_path), reader_(trace_path.empty() ? nullptr : TraceReader::open(trace_path, options)),
      requests_(requests) {}

std::string ArrivalStream::id_count_warning() const {
    return sim::id_count_warning(trace_path_, reader_ ? reader_->id_count_mismatches() : mismatches_);
}

bool ArrivalStream::next(TraceRecord& out) {
    if (!pending_ && reader_) {
        TraceRecord record;
        if (reader_->next(record)) {
            pending_ = std::move(record);
        } else {
            mismatches_ = reader_->id_count_mismatches();
            reader_.reset();
        }
    }
    if (pending_ &&
        (next_request_ >= requests_.size() || pending_->arrival_ns <= requests_[next_request_].arrival_ns)) {
        out = std::move(*pending_);
        pending_.reset();
        return true;
    }
    if (next_request_ >= requests_.size()) return false;
    out = requests_[next_request_++];
    return true;
}

namespace {

// A time relative to the first request in seconds, for messages; negative when it is earlier.
std::string seconds_after(std::uint64_t time_ns, std::uint64_t first_ns) {
    const double seconds = (static_cast<double>(time_ns) - static_cast<double>(first_ns)) / 1e9;
    char text[40];
    std::snprintf(text, sizeof text, "%.9g", seconds);
    return text;
}

}  // namespace

void TraceReader::arrival_goes_back(std::uint64_t absolute_ns, std::size_t column) const {
    throw InputError(path(), place(column),
                     "arrival time goes back: this request arrives at " + seconds_after(absolute_ns, first_ns_) +
                         " s, before the previous one at " + seconds_after(previous_ns_, first_ns_) +
                         " s (relative to the first request); expected requests sorted by arrival");
}

// A span this long is most often a finer unit read as a coarser one (epoch ns read as ms).
std::string TraceReader::finer_unit_hint() const {
    if (options_.format == TraceFormat::azure || options_.time_unit == TimeUnit::ns) return "";
    return "; if the timestamps are in a finer unit than " + std::string(time_unit_name(options_.time_unit)) +
           ", name it (--format jsonl --time-unit us|ns)";
}

void TraceReader::arrival_too_late(std::uint64_t absolute_ns, std::size_t column) const {
    char seconds[48];  // to the nanosecond: just past the bound, fewer digits read as the bound itself
    const std::uint64_t after_ns = absolute_ns - first_ns_;
    std::snprintf(seconds, sizeof seconds, "%llu.%09llu", static_cast<unsigned long long>(after_ns / 1'000'000'000),
                  static_cast<unsigned long long>(after_ns % 1'000'000'000));
    throw InputError(path(), place(column),
                     std::string("this request arrives ") + seconds + " s after the first one; expected at most " +
                         std::to_string(kArrivalMaxNs / 1'000'000'000) +
                         " s (about 31.7 years, as a scenario's at_ms)" + finer_unit_hint());
}

std::string TraceReader::place(std::size_t index) const {
    return std::to_string(lines_.number()) + ":" + std::to_string(index + 1 + lines_.column_offset());
}

void TraceReader::check_utf8(bool json_line) const {
    const std::string& text = lines_.text();
    std::size_t sequence = 0;
    const std::size_t bad = find_invalid_utf8(text, &sequence, json_line);
    if (bad == std::string::npos) return;
    if (text[bad] == '\0') throw InputError(path(), place(bad), kNulInJson);
    const auto hex = [&](std::size_t at) {
        char out[8];
        std::snprintf(out, sizeof out, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[at])));
        return std::string(out);
    };
    // A byte that breaks a sequence may be plain ASCII (the quote after a lone lead byte): name
    // the byte the sequence started with too.
    if (sequence != bad)
        throw InputError(path(), place(bad),
                         "invalid UTF-8 byte " + hex(bad) + " in a sequence that starts with " + hex(sequence) +
                             "; expected UTF-8 text");
    throw InputError(path(), place(bad), "invalid UTF-8 byte " + hex(bad) + "; expected UTF-8 text");
}

std::size_t find_invalid_utf8(std::string_view text, std::size_t* sequence, bool nul_is_invalid) {
    std::size_t i = 0;
    while (i < text.size()) {
        // Traces are nearly all ASCII: skip eight bytes at a time while no high bit is set (and,
        // when asked, no byte is zero).
        for (std::uint64_t word = 0; i + sizeof word <= text.size(); i += sizeof word) {
            std::memcpy(&word, text.data() + i, sizeof word);
            const std::uint64_t zero_byte = (word - 0x0101010101010101u) & ~word & 0x8080808080808080u;
            if ((word & 0x8080808080808080u) != 0 || (nul_is_invalid && zero_byte != 0)) break;
        }
        if (i == text.size()) break;
        const auto lead = static_cast<unsigned char>(text[i]);
        if (lead == 0 && nul_is_invalid) {
            if (sequence != nullptr) *sequence = i;
            return i;
        }
        if (lead < 0x80) {
            ++i;
            continue;
        }
        std::size_t bad = 0;
        const std::size_t length = utf8_sequence(text, i, &bad);
        if (length == 0) {
            if (sequence != nullptr) *sequence = i;
            return bad;
        }
        i += length;
    }
    return std::string_view::npos;
}

}  // namespace kvcheck::sim
