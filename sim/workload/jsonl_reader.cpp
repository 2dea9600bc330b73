// The JSONL trace reader: Mooncake (integer ms timestamps, 512-token blocks) and general hash-id
// JSONL (numeric or string timestamps in a declared unit, any block size). One object per line.
// A line of the usual shape is read through nlohmann's SAX interface (jsonl_sax.hpp), as the DOM
// is most of the cost; any other line is parsed as a DOM, which makes every message.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>

#include "sim/io/input_error.hpp"
#include "sim/io/json_fields.hpp"
#include "sim/workload/jsonl_sax.hpp"
#include "sim/workload/readers.hpp"

namespace kvcheck::sim {

namespace {

using nlohmann::json;

constexpr const char* kExpectedKeys = "timestamp, input_length, output_length and hash_ids";

// A short rendering of a JSON value for messages: long values are cut, so one bad line stays one line.
std::string describe(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    if (value.is_array()) return "an array " + text;
    if (value.is_object()) return "an object " + text;
    if (value.is_string()) return "a string " + text;
    return text;
}

// A non-negative integer: nlohmann reads "-0" as a signed zero, which is 0 like the scenario
// loader takes it.
bool is_unsigned(const json& value) {
    return value.is_number_unsigned() || (value.is_number_integer() && value.get<std::int64_t>() == 0);
}

// nlohmann's message without its "[json.exception...] parse error at line 1, column N: " preamble.
std::string parse_error_reason(const json::parse_error& error) {
    const std::string what = error.what();
    const std::size_t column = what.find("column ");
    const std::size_t colon = column == std::string::npos ? std::string::npos : what.find(": ", column);
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

// nlohmann reports the byte where it stopped, at the end of the offending token; the column is
// more useful at the token's start, which its "last read: '...'" text tells when it matches.
// (Escaped quotes inside a string literal can misplace the start; the line is still right.)
std::size_t error_token_start(const std::string& text, const json::parse_error& error) {
    const std::size_t end = std::min<std::size_t>(error.byte, text.size());
    const std::string what = error.what();
    const std::size_t open = what.find("last read: '");
    const std::size_t close = open == std::string::npos ? std::string::npos : what.find('\'', open + 12);
    if (close == std::string::npos) {
        // No "last read" for a whole string literal: step back to its opening quote.
        if (end >= 2 && text[end - 1] == '"') {
            const std::size_t quote = text.rfind('"', end - 2);
            if (quote != std::string::npos) return quote;
        }
        // Nor for a number after a number ("0600" lexes as 0, then 600): step back to its start
        // (over the letters of a number only, so not into a `true` before it).
        if (what.find("unexpected number literal") != std::string::npos) {
            std::size_t start = end;
            while (start > 0 && std::string_view("0123456789+-.eE").find(text[start - 1]) != std::string_view::npos)
                --start;
            while (start < end && std::string_view("0123456789-").find(text[start]) == std::string_view::npos) ++start;
            if (start < end) return start;
        }
        return end == 0 ? 0 : end - 1;
    }
    std::string token = what.substr(open + 12, close - open - 12);
    // nlohmann writes control characters in "last read" as <U+00XX>; a tab is a blank below.
    for (std::size_t tab = token.find("<U+0009>"); tab != std::string::npos; tab = token.find("<U+0009>", tab + 1))
        token.replace(tab, 8, "\t");
    // After a key or a string nlohmann's "last read" runs from it over the colon, comma or
    // bracket to the bad literal ('"timestamp": I', '"a",tru'): the bad token is what follows.
    if (!token.empty() && token.front() == '"') {
        std::size_t i = 1;
        while (i < token.size() && token[i] != '"') i += token[i] == '\\' ? 2 : 1;
        const std::size_t rest = token.find_first_not_of(" \t:,[{", i + 1);
        if (i < token.size() && rest != std::string::npos) token.erase(0, rest);
    }
    // After a complete value nlohmann's "last read" can run from it over blanks to the bad byte
    // ('1]}   g'); outside a string literal the bad token is what follows the last blank.
    if (const std::size_t blank = token.find_last_of(" \t"); blank != std::string::npos && token.front() != '"')
        token.erase(0, blank + 1);
    if (!token.empty() && token.size() <= end && text.compare(end - token.size(), token.size(), token) == 0)
        return end - token.size();
    return end == 0 ? 0 : end - 1;
}

// Parses "123" or "123.456" exactly (no exponent) into ns; false when the text has another shape.
bool parse_plain_decimal(std::string_view text, std::uint64_t unit_ns, std::uint64_t& out_ns, bool& overflow) {
    overflow = false;
    const std::size_t dot = text.find('.');
    const std::string_view whole = text.substr(0, dot);
    const std::string_view fraction = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    if (whole.empty() || (dot != std::string_view::npos && fraction.empty())) return false;
    std::uint64_t integer = 0;
    const auto [end, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), integer);
    if (end != whole.data() + whole.size()) return false;
    std::uint64_t scaled = 0;
    if (ec == std::errc::result_out_of_range || __builtin_mul_overflow(integer, unit_ns, &scaled)) {
        overflow = true;
        return true;
    }
    // Digits past the unit's ns resolution are dropped (truncated, not rounded).
    std::uint64_t place = unit_ns;
    for (char c : fraction) {
        if (c < '0' || c > '9') return false;
        place /= 10;
        if (__builtin_add_overflow(scaled, static_cast<std::uint64_t>(c - '0') * place, &scaled)) overflow = true;
    }
    out_ns = scaled;
    return true;
}

class JsonlReader final : public TraceReader {
public:
    JsonlReader(const std::string& path, const TraceOptions& options)
        : TraceReader(path, options), mooncake_(options.format == TraceFormat::mooncake) {}

protected:
    bool read_record(TraceRecord& out) override {
        while (lines_.next_line()) {
            const std::string& text = lines_.text();
            if (text.find_first_not_of(" \t") == std::string::npos) continue;
            parse_line(out);
            return true;
        }
        return false;
    }

private:
    void parse_line(TraceRecord& out) {
        const std::string& text = lines_.text();
        check_utf8(/*json_line=*/true);
        if (detail::parse_flat_trace_line(text, !mooncake_, flat_)) {
            take_flat_line(out);
            return;
        }
        if (const std::size_t deep = too_deep_at(text); deep != std::string::npos)
            throw InputError(path(), place(deep), kTooDeep);
        json object;
        DuplicateKeys duplicates;
        try {
            object = json::parse(text, std::ref(duplicates));
        } catch (const json::parse_error& error) {
            throw InputError(path(), place(error_token_start(text, error)),
                             "invalid JSON: " + parse_error_reason(error));
        } catch (const json::out_of_range& error) {
            const std::size_t at = overflow_token_start(text, error);
            throw InputError(path(), at == std::string::npos ? line_place() : place(at),
                             "number out of range; expected a finite number");
        }
        if (!duplicates.duplicate().empty())
            throw InputError(path(), line_place(),
                             "duplicate key " + duplicates.duplicate() + "; each key may appear once in an object");
        if (!object.is_object())
            throw InputError(path(), place(text.find_first_not_of(" \t")),
                             "expected a JSON object with keys " + std::string(kExpectedKeys) + ", got " +
                                 describe(object));
        const std::uint64_t absolute_ns = timestamp_ns(field(object, "timestamp"));
        out.input_tokens = static_cast<std::uint32_t>(unsigned_field(object, "input_length", kInputTokensMax));
        check_prompt(out.input_tokens);
        out.output_tokens = static_cast<std::uint32_t>(unsigned_field(object, "output_length", kOutputTokensMax));
        out.block_tokens = options_.block_tokens;
        read_hash_ids(field(object, "hash_ids"), out);
        reconcile_ids(out);
        out.line = lines_.number();
        out.arrival_ns = relative_arrival(absolute_ns, [this] { return value_index("timestamp"); });
    }

    // The DOM path's steps in its order, on values the fast path found present and of the right
    // types: a line that fails a range check fails at the same one, with the same message.
    void take_flat_line(TraceRecord& out) {
        const std::uint64_t absolute_ns = timestamp_ns(flat_.timestamp);
        out.input_tokens = static_cast<std::uint32_t>(at_most("input_length", flat_.input_length, kInputTokensMax));
        check_prompt(out.input_tokens);
        out.output_tokens = static_cast<std::uint32_t>(at_most("output_length", flat_.output_length, kOutputTokensMax));
        out.block_tokens = options_.block_tokens;
        out.block_ids.swap(flat_.hash_ids);  // the record's old buffer is the next line's
        reconcile_ids(out);
        out.line = lines_.number();
        out.arrival_ns = relative_arrival(absolute_ns, [this] { return value_index("timestamp"); });
    }

    const json& field(const json& object, const char* key) const {
        const auto it = object.find(key);
        if (it == object.end())
            throw InputError(path(), line_place(),
                             "missing key \"" + std::string(key) + "\"; expected keys " + kExpectedKeys);
        return *it;
    }

    // Where a key's value starts in the line (0-based), so messages point at the value itself: the
    // value of the top object's key, written as it is named (a key spelled with escapes is not
    // found, and the message then points at the line's start). Strings are skipped whole, so a
    // key of a nested object or one inside another key's text is not taken for it.
    std::size_t value_index(const std::string& key) const {
        const std::string& text = lines_.text();
        int depth = 0;
        for (std::size_t i = 0; i < text.size(); ++i) {
            const char c = text[i];
            if (c == '{' || c == '[')
                ++depth;
            else if (c == '}' || c == ']')
                --depth;
            if (c != '"') continue;
            const std::size_t open = i;
            for (++i; i < text.size() && text[i] != '"'; ++i)
                if (text[i] == '\\') ++i;
            if (depth != 1 || i >= text.size() || text.compare(open + 1, i - open - 1, key) != 0) continue;
            const std::size_t colon = text.find_first_not_of(" \t\r", i + 1);
            if (colon == std::string::npos || text[colon] != ':') continue;
            const std::size_t value = text.find_first_not_of(" \t\r", colon + 1);
            return value == std::string::npos ? text.size() : value;
        }
        return 0;
    }

    // Where element `index` of the array starting at `open` begins. The elements before it are
    // unsigned integers (the first bad one is reported), so the commas before it are its separators.
    std::size_t element_index(std::size_t open, std::size_t index) const {
        const std::string& text = lines_.text();
        std::size_t at = open;
        for (; index > 0 && at != std::string::npos; --index) at = text.find(',', at + 1);
        const std::size_t start = at == std::string::npos ? at : text.find_first_not_of(" \t\r", at + 1);
        return start == std::string::npos ? open : start;
    }

    // A value for a message as the line writes it when it is a number: nlohmann holds a literal
    // past 64 bits as a double, which would print as 1.8446744073709552e+19.
    std::string shown_at(std::size_t at, const json& value) const {
        if (!value.is_number_float()) return describe(value);
        const std::string& text = lines_.text();
        const std::size_t end = std::min(text.find_first_of(",]} \t\r", at), text.size());
        if (at >= end) return describe(value);
        const std::string literal = text.substr(at, end - at);
        return literal.size() > 40 ? literal.substr(0, 37) + "..." : literal;
    }
    std::string shown(const std::string& key, const json& value) const { return shown_at(value_index(key), value); }

    [[noreturn]] void fail_at(const std::string& key, const std::string& message) const {
        throw InputError(path(), place(value_index(key)), message);
    }

    std::uint64_t unsigned_field(const json& object, const std::string& key, std::uint64_t max) const {
        const json& value = field(object, key.c_str());
        if (!is_unsigned(value))
            fail_at(key, "expected an unsigned integer for \"" + key + "\", got " + shown(key, value));
        return at_most(key, value.get<std::uint64_t>(), max);
    }

    std::uint64_t at_most(const std::string& key, std::uint64_t number, std::uint64_t max) const {
        if (number > max)
            fail_at(key, "expected \"" + key + "\" at most " + std::to_string(max) + ", got " + std::to_string(number));
        return number;
    }

    // A request without a prompt has nothing to look up or cache (a scenario's input_tokens is at least 1 too).
    void check_prompt(std::uint32_t input_tokens) const {
        if (input_tokens == 0) fail_at("input_length", "expected \"input_length\" at least 1, got 0");
    }

    void read_hash_ids(const json& ids, TraceRecord& out) const {
        if (!ids.is_array())
            fail_at("hash_ids", "expected an array of unsigned integers for \"hash_ids\", got " + describe(ids));
        out.block_ids.clear();
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (!is_unsigned(ids[i])) {
                const std::size_t at = element_index(value_index("hash_ids"), i);
                throw InputError(path(), place(at),
                                 "expected an unsigned integer at hash_ids[" + std::to_string(i) + "], got " +
                                     shown_at(at, ids[i]));
            }
            out.block_ids.push_back(ids[i].get<std::uint64_t>());
        }
    }

    void reconcile_ids(TraceRecord& out) {
        if (out.block_ids.size() != blocks_for(out.input_tokens, out.block_tokens))
            reconcile_id_count(out, value_index("hash_ids"));
    }

    std::uint64_t timestamp_ns(const json& value) const {
        const std::uint64_t unit_ns = time_unit_ns(options_.time_unit);
        const auto too_large = [&] {
            fail_at("timestamp", "expected a \"timestamp\" that fits in 64-bit nanoseconds, got " +
                                     shown("timestamp", value) + finer_unit_hint());
        };
        if (is_unsigned(value)) {
            std::uint64_t scaled = 0;
            if (__builtin_mul_overflow(value.get<std::uint64_t>(), unit_ns, &scaled)) too_large();
            return scaled;
        }
        if (mooncake_)
            fail_at("timestamp", "expected an unsigned integer (milliseconds) for \"timestamp\", got " +
                                     shown("timestamp", value) +
                                     "; format jsonl reads string and fractional timestamps in any time_unit "
                                     "(--format jsonl --time-unit s|ms|us|ns)");
        if (value.is_number_float()) return float_ns(value.get<double>(), unit_ns, value);
        if (value.is_string()) {
            const auto& text = value.get_ref<const std::string&>();
            std::uint64_t scaled = 0;
            bool overflow = false;
            if (parse_plain_decimal(text, unit_ns, scaled, overflow)) {
                if (overflow) too_large();
                return scaled;
            }
            double number = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
            if (ec == std::errc() && end == text.data() + text.size()) return float_ns(number, unit_ns, value);
        }
        fail_at("timestamp", "expected a non-negative number (or a string holding one) of " +
                                 std::string(time_unit_name(options_.time_unit)) + " for \"timestamp\", got " +
                                 shown("timestamp", value));
    }

    std::uint64_t float_ns(double number, std::uint64_t unit_ns, const json& value) const {
        if (!std::isfinite(number) || number < 0)
            fail_at("timestamp", "expected a non-negative number for \"timestamp\", got " + shown("timestamp", value));
        const double scaled = number * static_cast<double>(unit_ns);
        if (scaled >= 1.8e19)
            fail_at("timestamp", "expected a \"timestamp\" that fits in 64-bit nanoseconds, got " +
                                     shown("timestamp", value) + finer_unit_hint());
        return static_cast<std::uint64_t>(scaled + 0.5);  // NOLINT(bugprone-incorrect-roundings): checked >= 0 above
    }

    bool mooncake_;
    detail::FlatTraceLine flat_;  // the fast path's values, its buffers kept from line to line
};

}  // namespace

std::unique_ptr<TraceReader> make_jsonl_reader(const std::string& path, const TraceOptions& options) {
    return std::make_unique<JsonlReader>(path, options);
}

}  // namespace kvcheck::sim
