// Replay schedules (docs/schedule-format.md, `kvcheck.schedule/1`): the types, the loader that
// validates them into kvcheck::sim::InputError with a JSON pointer, and the one writer (the
// simulator's exporter and the tests write through it). The namespace is the replay's: a
// schedule is what a replay reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/preset.hpp"

namespace kvcheck::replay {

// Bounds on what a schedule may ask for. Traces hold prompts of over 100,000 tokens (the synthetic
// conversation trace reaches 126,195), so the token bound leaves room for those.
inline constexpr int kMaxTokens = 1 << 20;  // prompt and source token lists
inline constexpr int kMaxDecodeSteps = 4096;
inline constexpr int kMaxReads = 1 << 16;

enum class Damage { none, unwritten, lost_half, lost_block, misaligned, torn };
enum class Transport { offload, load };

std::string_view damage_name(Damage damage);

// Where a read's bytes came from: what the group computed for tokens[0:end] over [start, end)
// under weights_version, written in `layout`; indexer bytes summarise KV of index_weights_version.
struct Source {
    std::vector<int> tokens;
    // Written as "tokens": "request": the schedule's own prompt (tokens holds a copy of it). The
    // replay takes such bytes from its reference run when the weights match (docs/replay.md).
    bool request = false;
    int start = 0;
    int end = 0;
    std::uint64_t weights_version = 0;
    int layout = 0;
    std::uint64_t index_weights_version = 0;
};

struct Read {
    int group = 0;
    model::Form form = model::Form::compressed_kv;
    int start = 0;  // token range the reader believes the bytes cover (linear: the state at end)
    int end = 0;
    std::optional<Source> source;  // nullopt: nothing was registered
    std::vector<Transport> transport;
    Damage damage = Damage::none;

    bool moved() const;  // a load placed the bytes at a new address
};

struct Schedule {
    std::string file;  // where it was loaded from, for messages
    std::string scenario;
    std::string policy;
    std::uint64_t seed = 0;
    std::int64_t request = 0;
    std::string preset;
    std::vector<model::CacheGroup> groups;
    std::uint64_t weights_version = 0;
    std::vector<int> layouts;  // per group, the layout the reading kernel expects
    std::vector<int> tokens;
    int resume_len = 0;
    int prefill_chunk_tokens = 1;
    int decode_steps = 0;
    std::vector<Read> reads;
    // Faults that touched the content read, by the model step (from 1) that applied them.
    struct Event {
        std::uint64_t step = 0;
        std::string what;
    };
    std::vector<Event> events;
    std::vector<std::string> faults;
    bool oracle_corrupt = false;
    std::vector<std::string> oracle_invariants;
};

// Validates and converts; throws sim::InputError(file, JSON pointer, message) on bad input.
Schedule parse_schedule(const nlohmann::json& doc, const std::string& file);
// Reads and parses a file; syntax errors carry line:column.
Schedule load_schedule(const std::string& path);
nlohmann::json schedule_to_json(const Schedule& schedule);

}  // namespace kvcheck::replay
