// Typed access to one JSON object of an input file that records every problem with its JSON
// pointer instead of stopping at the first, so `kvcheck validate` can list them all and loaders
// can fail with the first one. Unknown keys are problems too (they are usually typos).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/preset.hpp"
#include "sim/io/input_error.hpp"

namespace kvcheck::sim {

struct Problems {
    std::string file;
    std::vector<InputError> list;
    std::vector<std::string> overridden;  // JSON pointers whose values came from --set
    void add(const std::string& pointer, const std::string& message) {
        // The value at `pointer` holds an overridden one, or lies inside one.
        const auto within = [](const std::string& inner, const std::string& outer) {
            return !outer.empty() && inner.starts_with(outer) &&
                   (inner.size() == outer.size() || inner[outer.size()] == '/');
        };
        for (const std::string& o : overridden)
            if (within(pointer, o) || within(o, pointer)) {
                list.emplace_back(file, pointer, message + " (set by --set " + o + ")");
                return;
            }
        list.emplace_back(file, pointer, message);
    }
    // Throws the first problem, if any.
    void raise() const {
        if (!list.empty()) throw list.front();
    }
};

std::string pointer_escape(const std::string& key);

class Fields {
public:
    // Reports a problem (and reads nothing) when `value` is not an object.
    Fields(const nlohmann::json& value, std::string pointer, Problems& problems);

    bool has(const std::string& key) const;
    std::string at(const std::string& key) const { return pointer_ + "/" + pointer_escape(key); }
    const nlohmann::json* raw(const std::string& key);  // marks the key as known

    std::uint64_t unsigned_number(const std::string& key, std::uint64_t fallback, std::uint64_t min, std::uint64_t max);
    std::optional<std::uint64_t> optional_unsigned(const std::string& key, std::uint64_t min, std::uint64_t max);
    double number(const std::string& key, double fallback, double min, double max);
    std::optional<double> optional_number(const std::string& key, double min, double max);
    std::string text(const std::string& key, const std::string& fallback);
    std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed);
    bool flag(const std::string& key, bool fallback);
    std::vector<std::uint64_t> unsigned_list(const std::string& key, std::uint64_t max);

    // Records the keys never asked for as "unknown key" problems.
    void finish();

private:
    const nlohmann::json* object_ = nullptr;
    std::string pointer_;
    Problems& problems_;
    std::set<std::string> known_;
};

std::string json_type_name(const nlohmann::json& value);

// A cache group as scenario JSON (docs/scenario.schema.json); `indexed_group` only for an indexer.
// Counterexample scenarios, exported schedules and `kvcheck presets --json` all write groups so.
nlohmann::json cache_group_json(const model::CacheGroup& group);

// "LINE:COL" (both from 1) of a byte offset in text.
std::string line_column(const std::string& text, std::size_t byte);

// Where the literal named by nlohmann's number-overflow error ("... parsing '1e999'") starts in
// text, or npos: the first number token that spells it, never text inside a string.
std::size_t overflow_token_start(const std::string& text, const nlohmann::json::out_of_range& error);

// How deep arrays and objects may nest in any JSON kvcheck reads. Real inputs nest under ten
// levels; far deeper text is hostile, and nlohmann's recursive copies, dumps and comparisons of
// such a value would overflow the stack.
inline constexpr std::size_t kJsonDepthMax = 512;

// The byte of the first '[' or '{' that opens level kJsonDepthMax + 1 (brackets inside strings
// do not count), or npos when text nests no deeper than kJsonDepthMax.
std::size_t too_deep_at(std::string_view text);
inline constexpr const char* kTooDeep = "JSON nested deeper than 512 levels; expected at most 512";
static_assert(kJsonDepthMax == 512, "kTooDeep names the bound: change both together");

// A JSON value as a message may quote it: its text, cut to 60 bytes.
std::string brief(const nlohmann::json& value);

// A parser callback for nlohmann::json::parse that watches for an object key given twice
// (nlohmann keeps the last silently) and remembers the JSON pointer of the first such key.
class DuplicateKeys {
public:
    bool operator()(int depth, nlohmann::json::parse_event_t event, const nlohmann::json& parsed);
    const std::string& duplicate() const { return duplicate_; }  // empty: no key given twice

private:
    struct Frame {
        bool object;
        std::set<std::string> keys;  // an object's keys so far
        std::string key;             // an object's current key
        std::size_t index;           // an array's current element
    };
    void next_element();
    std::string pointer() const;
    std::vector<Frame> frames_;
    std::string duplicate_;
};

// Parses text as JSON; a syntax error or a number literal beyond a double becomes
// InputError(file, "LINE:COL", message), and a key given twice in one object InputError(file,
// its JSON pointer, message).
nlohmann::json parse_json_text(const std::string& text, const std::string& file);

}  // namespace kvcheck::sim
