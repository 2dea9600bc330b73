// Unit tests of the trace readers on bad input: every kind of malformed line placed at its line
// and column, the SAX fast path against the DOM path, and the UTF-8 check.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/io/input_error.hpp"
#include "sim/workload/jsonl_sax.hpp"
#include "sim/workload/trace.hpp"
#include "tests/workload_fixtures.hpp"

namespace kvcheck::sim {
namespace {

struct BadInput {
    const char* name;
    TraceFormat format;
    std::string content;  // "<dir>" makes a folder, "<none>" no file at all
    std::string place;
    std::string message;
};

// Proves: each malformed input throws InputError naming the file, the line (and column where
// there is one) and what was expected.
TEST_F(Workload, MalformedInputsAreReported) {
    const std::string ok = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n";
    const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
    const std::vector<BadInput> cases = {
        {"missing", TraceFormat::mooncake, "<none>", "", "no such file"},
        {"folder", TraceFormat::mooncake, "<dir>", "", "is a directory"},
        {"empty", TraceFormat::mooncake, "", "", "no requests"},
        {"blank", TraceFormat::mooncake, "\n  \n", "", "no requests"},
        {"broken", TraceFormat::mooncake, ok + "{\"timestamp\": 1, \"input_length\": 10 \"output_length\": 1}\n",
         "2:37", "invalid JSON"},
        {"truncated", TraceFormat::mooncake, ok + "{\"timestamp\": 1, \"input_len", "2:18", "missing closing quote"},
        {"utf8", TraceFormat::mooncake, "{\"timestamp\": 0, \"x\": \"\xFF\"}\n", "1:24", "invalid UTF-8 byte 0xFF"},
        {"utf8-broken-sequence", TraceFormat::mooncake, "{\"timestamp\": 0, \"x\": \"\xE9\"}\n", "1:25",
         "invalid UTF-8 byte 0x22 in a sequence that starts with 0xE9"},
        {"not_object", TraceFormat::mooncake, "[1, 2]\n", "1:1", "expected a JSON object"},
        {"trailing_garbage", TraceFormat::mooncake, ok.substr(0, ok.size() - 1) + "   garbage\n", "1:77",
         "expected end of input"},
        {"string_length", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": \"10\", \"output_length\": 1, \"hash_ids\": [1]}\n", "1:34",
         "expected an unsigned integer for \"input_length\", got a string \"10\""},
        {"negative", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": -5, \"hash_ids\": [1]}\n", "1:55",
         "expected an unsigned integer for \"output_length\", got -5"},
        {"huge", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 99999999999999999999999, \"output_length\": 1, \"hash_ids\": [1]}\n",
         "1:34", "expected an unsigned integer for \"input_length\""},
        {"over_limit", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 16777217, \"output_length\": 1, \"hash_ids\": [1]}\n", "1:34",
         "at most 16777216"},
        {"missing_key", TraceFormat::mooncake, "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1}\n", "1",
         "missing key \"hash_ids\""},
        {"short_ids", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 1500, \"output_length\": 1, \"hash_ids\": [1, 2]}\n", "1:72",
         "expected 3 hash ids for input_length 1500 at 512 tokens per block, got 2"},
        {"long_ids", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1, 2]}\n", "1:70",
         "expected 1 hash id for input_length 10 at 512 tokens per block, got 2"},
        {"bad_id", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, -2]}\n", "1:75",
         "expected an unsigned integer at hash_ids[1], got -2"},
        {"bad_first_id", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [ \"1\", 2, 3]}\n", "1:74",
         "expected an unsigned integer at hash_ids[0], got a string \"1\""},
        {"bad_last_id", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [1,2,  [3]]}\n", "1:79",
         "expected an unsigned integer at hash_ids[2], got"},
        {"backwards", TraceFormat::mooncake,
         ok + "{\"timestamp\": 9, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n" +
             "{\"timestamp\": 8, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n",
         "3:15", "arrival time goes back"},
        {"float_ms", TraceFormat::mooncake,
         "{\"timestamp\": 0.5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n", "1:15",
         "expected an unsigned integer (milliseconds) for \"timestamp\""},
        {"word_time", TraceFormat::jsonl,
         "{\"timestamp\": \"soon\", \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n", "1:15",
         "expected a non-negative number (or a string holding one) of ms"},
        // The bad literal itself is placed, not the key before it nor the end of a number.
        {"literal_after_key", TraceFormat::mooncake,
         "{\"timestamp\": Infinity, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n", "1:15",
         "invalid literal"},
        {"number_after_number", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 0600, \"output_length\": 1, \"hash_ids\": [1]}\n", "1:34",
         "unexpected number literal"},
        {"literal_in_array", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [NaN]}\n", "1:70",
         "invalid literal"},
        {"literal_after_tab", TraceFormat::mooncake, "{\"timestamp\":\ttru, \"input_length\": 1}\n", "1:15",
         "invalid literal"},
        {"number_after_true", TraceFormat::mooncake, "[true-1]\n", "1:6", "unexpected number literal"},
        {"truncated_after_number", TraceFormat::mooncake, "{\"timestamp\": 0, \"input_length\": 12", "1:35",
         "unexpected end of input"},
        // A number past 64 bits is echoed as written, not as the double nlohmann holds.
        {"timestamp_past_64_bits", TraceFormat::mooncake,
         "{\"timestamp\": 18446744073709551616, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n",
         "1:15", "for \"timestamp\", got 18446744073709551616"},
        {"id_past_64_bits", TraceFormat::mooncake,
         "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [18446744073709551616]}\n",
         "1:70", "at hash_ids[0], got 18446744073709551616"},
        // The key's value is placed, not a key of a nested object nor text inside another key.
        {"key_text_inside_another_key", TraceFormat::mooncake,
         "{\"x\\\"input_length\": 7, \"timestamp\": 0, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n",
         "1:56", "expected \"input_length\" at least 1"},
        {"key_in_nested_object", TraceFormat::mooncake,
         "{\"meta\": {\"input_length\": 7}, \"timestamp\": 0, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": "
         "[]}\n",
         "1:63", "expected \"input_length\" at least 1"},
        {"nul_after_object", TraceFormat::mooncake, ok.substr(0, ok.size() - 1) + std::string(1, '\0') + ok, "1:74",
         "a NUL byte (0x00)"},
        {"csv_header", TraceFormat::azure, "TIME,Context,Generated\n2023-11-16 18:17:03.1,1,1\n", "1:1",
         "expected the CSV header"},
        {"csv_columns", TraceFormat::azure, header + "2023-11-16 18:17:03.1,1,1\n2023-11-16 18:17:04.1,1\n", "3",
         "expected 3 columns (TIMESTAMP,ContextTokens,GeneratedTokens), got 2"},
        {"csv_month", TraceFormat::azure, header + "2023-13-16 18:17:03.1,1,1\n", "2:1", "expected a TIMESTAMP like"},
        {"csv_year", TraceFormat::azure, header + "1969-12-31 23:59:59.1,1,1\n", "2:1", "(years 1970 to 2500)"},
        {"csv_fraction", TraceFormat::azure, header + "2023-11-16 18:17:03.1234567890,1,1\n", "2:1",
         "expected a TIMESTAMP like"},
        {"csv_tokens", TraceFormat::azure, header + "2023-11-16 18:17:03.1,12x,1\n", "2:23",
         "expected an unsigned integer for ContextTokens, got \"12x\""},
        {"csv_negative", TraceFormat::azure, header + "2023-11-16 18:17:03.1,12,-1\n", "2:26",
         "expected an unsigned integer for GeneratedTokens"},
        {"csv_only_header", TraceFormat::azure, header, "", "no requests"},
    };
    ASSERT_GE(cases.size(), 15u);
    for (const BadInput& c : cases) {
        std::string path = (dir_ / c.name).string();
        if (c.content == "<dir>")
            fs::create_directories(path);
        else if (c.content != "<none>")
            path = write(c.name, c.content);
        TraceOptions options;
        options.format = c.format;
        options.id_count = IdCountRule::strict;  // the count cases are errors only when strict
        try {
            read_all(path, options);
            ADD_FAILURE() << c.name << ": no error";
        } catch (const InputError& e) {
            EXPECT_EQ(e.file(), path) << c.name;
            EXPECT_EQ(e.place(), c.place) << c.name << ": " << e.what();
            EXPECT_NE(e.message().find(c.message), std::string::npos) << c.name << ": " << e.what();
        }
    }
}

// The line with a nested extra key before its closing brace: the fast path takes no nested
// value, and the DOM path ignores unknown keys, so the copy reads through the DOM path alone.
std::string through_dom(const std::string& line) {
    std::string copy = line;
    copy.insert(copy.rfind('}'), ", \"force_dom\": {\"nested\": 1}");
    return copy;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    return text;
}

// Proves: the SAX fast path and the DOM path read every line of the usual shape alike. Each file
// is read as written, every line through the fast path (detail::parse_flat_trace_line says so),
// and again with each line sent to the DOM path; the records agree field for field, and a line
// that fails a range check fails with the same place and message both ways.
TEST_F(Workload, FastPathMatchesDomPath) {
    std::string ids_32768;  // 16,777,216 tokens (kInputTokensMax) in 512-token blocks
    for (std::uint64_t id = 0; id < 32768; ++id) {
        if (id != 0) ids_32768 += ',';
        ids_32768 += std::to_string(id * 1'000'003);
    }
    const std::vector<std::string> mooncake = {
        R"({"timestamp": 0, "input_length": 1025, "output_length": 7, "hash_ids": [0, 1, 2]})",
        R"({"timestamp":5,"input_length":512,"output_length":0,"hash_ids":[18446744073709551615]})",
        " \t{ \"hash_ids\" : [ 3 ,\t4 ] , \"output_length\" : 16777216 , \"input_length\" : 513 , \"timestamp\" : 6 } "
        "\t\r",
        R"({"timestamp": 7, "input_length": 1, "output_length": 1, "hash_ids": [4], "note": "caf\u00e9 \"x\"", "n": null,)"
        R"( "b": true, "f": -1.5e308, "i": -7, "u": 99999999999999999999999})",
        R"({"time\u0073tamp": 1000000000000, "input_length": 1, "output_length": 2, "hash_ids": [0]})",  // kArrivalMaxNs
        R"({"timestamp": 1000000000000, "input_length": 16777216, "output_length": 3, "hash_ids": [)" + ids_32768 +
            "]}",
    };
    const std::vector<std::string> general = {
        // seconds, 16-token blocks: float and string timestamps too
        R"({"timestamp": "1700000000.25", "input_length": 17, "output_length": 1, "hash_ids": [5, 9]})",
        R"({"timestamp": 1700000000.5, "input_length": 16, "output_length": 2, "hash_ids": [5]})",
        R"({"timestamp": 1.7000000015e9, "input_length": 33, "output_length": 0, "hash_ids": [5, 6, 7]})",
        R"({"timestamp": 1700000002, "input_length": 1, "output_length": 3, "hash_ids": [9], "extra": 1})",
        R"({"timestamp": "1.7000000025e9", "input_length": 1, "output_length": 3, "hash_ids": [8]})",
        // counts that disagree, taken by trust-length alike: one id more, two fewer
        R"({"timestamp": 1700000003, "input_length": 16, "output_length": 3, "hash_ids": [5, 6]})",
        R"({"timestamp": 1700000004, "input_length": 48, "output_length": 3, "hash_ids": [5]})",
    };
    const std::vector<std::pair<std::vector<std::string>, TraceOptions>> traces = {{mooncake, TraceOptions{}},
                                                                                   {general, jsonl(TimeUnit::s, 16)}};
    detail::FlatTraceLine flat;
    for (std::size_t t = 0; t < traces.size(); ++t) {
        const auto& [lines, options] = traces[t];
        std::vector<std::string> dom_lines;
        for (const std::string& line : lines) {
            EXPECT_TRUE(detail::parse_flat_trace_line(line, options.format == TraceFormat::jsonl, flat))
                << line.substr(0, 80);
            dom_lines.push_back(through_dom(line));
            EXPECT_FALSE(detail::parse_flat_trace_line(dom_lines.back(), true, flat)) << dom_lines.back().substr(0, 80);
        }
        const auto fast = read_all(write("fast" + std::to_string(t), joined(lines)), options);
        const auto dom = read_all(write("dom" + std::to_string(t), joined(dom_lines)), options);
        ASSERT_EQ(fast.size(), lines.size());
        ASSERT_EQ(dom.size(), lines.size());
        for (std::size_t i = 0; i < lines.size(); ++i) {
            EXPECT_EQ(fast[i].arrival_ns, dom[i].arrival_ns) << t << ":" << i;
            EXPECT_EQ(fast[i].input_tokens, dom[i].input_tokens) << t << ":" << i;
            EXPECT_EQ(fast[i].output_tokens, dom[i].output_tokens) << t << ":" << i;
            EXPECT_EQ(fast[i].block_tokens, dom[i].block_tokens) << t << ":" << i;
            EXPECT_EQ(fast[i].block_ids, dom[i].block_ids) << t << ":" << i;
            EXPECT_EQ(fast[i].line, dom[i].line) << t << ":" << i;
        }
    }
    EXPECT_EQ(read_all(write("spot", joined(mooncake)), TraceOptions{})[5].block_ids[32767],
              std::uint64_t{32767} * 1'000'003);

    // Lines of the fast path's shape that a check after parsing rejects (the last line of each).
    const std::string ok = R"({"timestamp": 10, "input_length": 10, "output_length": 1, "hash_ids": [1]})";
    TraceOptions strict;
    strict.id_count = IdCountRule::strict;
    const std::vector<std::pair<std::string, TraceOptions>> failing = {
        {R"({"timestamp": 18446744073710, "input_length": 1, "output_length": 1, "hash_ids": [1]})", TraceOptions{}},
        {R"({"timestamp": 10, "input_length": 16777217, "output_length": 1, "hash_ids": [1]})", TraceOptions{}},
        {R"({"timestamp": 10, "input_length": 1, "output_length": 16777217, "hash_ids": [1]})", TraceOptions{}},
        {R"({"timestamp": 10, "input_length": 1025, "output_length": 1, "hash_ids": [1, 2]})", strict},
        {R"({"timestamp": 9, "input_length": 1, "output_length": 1, "hash_ids": [1]})", TraceOptions{}},
        {R"({"timestamp": "soon", "input_length": 1, "output_length": 1, "hash_ids": [1]})", jsonl(TimeUnit::ms, 512)},
        {R"({"timestamp": -0.5, "input_length": 1, "output_length": 1, "hash_ids": [1]})", jsonl(TimeUnit::ms, 512)},
        {R"({"timestamp": 1e300, "input_length": 1, "output_length": 1, "hash_ids": [1]})", jsonl(TimeUnit::ms, 512)},
        {R"({"timestamp": "18446744073709.9", "input_length": 1, "output_length": 1, "hash_ids": [1]})",
         jsonl(TimeUnit::ms, 512)},
        {R"({"timestamp": 1000000000011, "input_length": 1, "output_length": 1, "hash_ids": [1]})",
         TraceOptions{}},  // past kArrivalMaxNs
    };
    for (std::size_t c = 0; c < failing.size(); ++c) {
        const auto& [line, options] = failing[c];
        EXPECT_TRUE(detail::parse_flat_trace_line(line, true, flat)) << line;
        std::string fast_error;
        std::string dom_error;
        try {
            read_all(write("fast_bad" + std::to_string(c), joined({ok, line})), options);
        } catch (const InputError& e) {
            fast_error = e.place() + ": " + e.message();
        }
        try {
            read_all(write("dom_bad" + std::to_string(c), joined({ok, through_dom(line)})), options);
        } catch (const InputError& e) {
            dom_error = e.place() + ": " + e.message();
        }
        EXPECT_TRUE(fast_error.starts_with("2:")) << line << " -> " << fast_error;
        EXPECT_EQ(fast_error, dom_error) << line;
    }

    // And lines the fast path leaves to the DOM path, good or bad (repeated keys: refused there).
    for (const char* line : {
             R"({"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "timestamp": 2})",
             R"({"x": 1, "timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "x": 2})",
             R"({"timestamp": 1, "input_length": 1.0, "output_length": 1, "hash_ids": [1]})",
             R"({"timestamp": 1, "input_length": "1", "output_length": 1, "hash_ids": [1]})",
             R"({"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [-1]})",
             R"({"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [[1]]})",
             R"({"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "x": [1]})",
             R"({"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": 1})",
             R"({"timestamp": 1, "input_length": 1, "output_length": 1})",
             R"({"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1]} x)",
             R"({"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1e999]})",
             R"({"timestamp": -0, "input_length": 1, "output_length": 1, "hash_ids": [1]})",
             R"({"timestamp": null, "input_length": 1, "output_length": 1, "hash_ids": [1]})",
             R"([{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1]}])",
         })
        EXPECT_FALSE(detail::parse_flat_trace_line(line, true, flat)) << line;
    EXPECT_FALSE(detail::parse_flat_trace_line(general[1], false, flat)) << "Mooncake takes unsigned timestamps only";
    const std::string repeated =
        R"({"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "timestamp": 14})";
    try {
        read_all(write("repeated", joined({ok, repeated})), TraceOptions{});
        ADD_FAILURE() << "a key given twice in a line is refused";
    } catch (const InputError& e) {
        EXPECT_EQ(e.place(), "2");
        EXPECT_NE(std::string(e.what()).find("duplicate key /timestamp"), std::string::npos) << e.what();
    }
}

// Proves: the UTF-8 check names the first bad byte wherever it falls against the eight-byte
// ASCII skip (before, inside and after a run of whole words), and walks over valid multi-byte
// sequences in any alignment without taking their bytes for errors; asked to, it finds a NUL
// byte at any offset too.
TEST(Utf8Check, FindsTheFirstBadByteAtEveryOffset) {
    const std::string ascii(37, 'a');
    EXPECT_EQ(find_invalid_utf8(ascii), std::string_view::npos);
    for (std::size_t at = 0; at < ascii.size(); ++at) {
        std::string bad = ascii;
        bad[at] = static_cast<char>(0xFF);  // never valid in UTF-8
        EXPECT_EQ(find_invalid_utf8(bad), at) << "0xFF at " << at;
        std::string valid = ascii;
        valid.insert(at, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");  // 2-, 3- and 4-byte sequences
        EXPECT_EQ(find_invalid_utf8(valid), std::string_view::npos) << "valid sequences at " << at;
        valid.back() = static_cast<char>(0xC3);  // a lead byte with nothing after it
        EXPECT_EQ(find_invalid_utf8(valid), valid.size() - 1) << "truncated sequence after one at " << at;
        std::string overlong = ascii;
        overlong.insert(at, "\xE0\x80\x80");  // overlong encoding of U+0000: the second byte is out of range
        EXPECT_EQ(find_invalid_utf8(overlong), at + 1) << "overlong form at " << at;
        std::string nul = ascii;
        nul[at] = '\0';  // valid UTF-8, refused in a JSON line
        EXPECT_EQ(find_invalid_utf8(nul), std::string_view::npos) << "NUL at " << at;
        EXPECT_EQ(find_invalid_utf8(nul, nullptr, true), at) << "NUL at " << at;
        valid.back() = 'a';
        valid += '\0';
        EXPECT_EQ(find_invalid_utf8(valid, nullptr, true), valid.size() - 1) << "NUL after sequences at " << at;
    }
}

}  // namespace
}  // namespace kvcheck::sim
