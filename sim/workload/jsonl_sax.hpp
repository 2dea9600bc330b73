// The JSONL reader's fast path: one trace line of the usual shape read with nlohmann's SAX
// interface, without building a DOM (a std::map and one json value per hash id).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvcheck::sim::detail {

// The four fields of a line as the fast path collects them, before any range check: the reader
// runs the same checks on them as on the DOM's values.
struct FlatTraceLine {
    nlohmann::json timestamp;  // unsigned; also a float or a string when text timestamps are on
    std::uint64_t input_length = 0;
    std::uint64_t output_length = 0;
    std::vector<std::uint64_t> hash_ids;
    std::vector<std::string> other_keys;  // scratch: the unknown keys seen, to spot a repeated one
};

// True when `text` is one JSON object whose keys are all different, that has "timestamp",
// "input_length" and "output_length" as unsigned integers and "hash_ids" as an array of them
// (with `text_timestamps`, a float or string "timestamp" too), and whose other keys have scalar
// values. False for every other line, which then goes to the DOM path, so that a bad line is
// reported exactly as before and an odd good one (a repeated key, say) reads as before.
bool parse_flat_trace_line(const std::string& text, bool text_timestamps, FlatTraceLine& out);

}  // namespace kvcheck::sim::detail
