// Sessions: multi-turn conversations found in a trace's block ids. A turn's prompt opens with the
// previous turn's prompt and answer, so the answer's decoded KV can be resumed, and a turn arrives
// only after the previous one has finished (docs/traces.md, "Sessions").
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "model/world.hpp"
#include "sim/workload/trace.hpp"

namespace kvcheck::sim {

struct SessionOptions {
    bool enabled = false;
    std::uint64_t think_ns = 0;  // the least time from a turn's finish to the next turn's arrival
};

// How far back a turn looks for the turn it continues, in requests of the trace.
inline constexpr std::uint64_t kSessionWindow = 8'192;

// Links each request, in trace order, to the turn it continues. Request P is a turn that R
// continues when
// - R's ids start with all of P's whole prompt blocks, and P is the latest request, among those
//   with the longest such prompt, of the last kSessionWindow;
// - P's whole prompt was its own: no earlier request of the window held all of its whole blocks
//   (a prompt that is only a system prompt an earlier request held starts no session);
// - R's prompt is long enough to hold P's prompt and answer (input >= P's input + output).
// Memory is bounded by the window: it keeps the block keys of its last kSessionWindow requests.
class SessionLinker {
public:
    struct Link {
        std::uint64_t parent = 0;         // trace index (0-based) of the turn continued
        std::uint32_t shared_blocks = 0;  // the parent's whole prompt blocks
    };

    // The next request of the trace; its trace index is the number of requests linked before it.
    std::optional<Link> link(const TraceRecord& record);
    std::uint64_t linked() const { return next_index_; }  // requests linked so far

private:
    struct Seen {
        std::vector<std::uint64_t> keys;  // chained keys of its whole blocks
        bool turn = false;                // its whole prompt was its own: it may be continued
        std::uint32_t tokens = 0;         // input + output: what a continuing prompt must hold
    };
    void forget(std::uint64_t index, const Seen& seen);

    std::uint64_t next_index_ = 0;
    std::deque<Seen> window_;                                  // the last requests, oldest first
    std::unordered_map<std::uint64_t, std::uint64_t> holder_;  // key of blocks 0..i -> latest request holding it
    std::unordered_map<std::uint64_t, std::uint64_t> turn_;    // key of a turn's whole prompt -> latest such turn
    std::vector<std::uint64_t> keys_;                          // scratch
};

// The simulator's side: which turn each arriving request is, when a held turn may arrive, and the
// spec a turn is built on. Only looked up by index, never iterated, so no hash order reaches an output.
class SessionBook {
public:
    explicit SessionBook(const SessionOptions& options) : think_ns_(options.think_ns) {}

    // A request's trace record comes due at `now`. Returns when it may arrive (now, or later when
    // the turn it continues finished less than the think time ago) or nullopt while that turn has
    // not finished: then the record is held and released by finished().
    struct Due {
        std::uint64_t turn = 0;  // its trace index
        std::uint64_t at_ns = 0;
    };
    std::optional<Due> due(const TraceRecord& record, std::uint64_t now);

    // The spec of an arriving turn: the continued turn's prompt and answer, then its own tokens.
    std::shared_ptr<const model::RequestSpec> spec(std::uint64_t turn, std::uint32_t uid, const TraceRecord& record);

    // The request of trace index `turn` finished at `now`: the turns it held, each with its time.
    std::vector<Due> finished(std::uint64_t turn, std::uint64_t now);

    // The record of a turn that was held (due() returned nullopt or a later time); read once.
    TraceRecord take(std::uint64_t turn);

    std::uint64_t turns() const { return turns_; }    // requests that continued an earlier turn
    std::uint64_t waited() const { return waited_; }  // of those, arrived later than their trace time

private:
    struct Turn {
        std::shared_ptr<const model::RequestSpec> spec;  // set when it arrives
        std::optional<SessionLinker::Link> link;
        std::shared_ptr<const model::RequestSpec> prior;  // the continued turn's spec, once that finished
        std::optional<std::uint64_t> finished_ns;
        std::vector<std::uint64_t> waiting;  // later turns held until it finishes
        std::optional<TraceRecord> held;     // its record while it waits
    };
    // No later request can continue it (the linker looks back over its window only).
    bool old(std::uint64_t index) const { return index + kSessionWindow < linker_.linked(); }

    std::uint64_t think_ns_;
    SessionLinker linker_;  // also numbers the requests: its count is the next index
    std::unordered_map<std::uint64_t, Turn> book_;
    std::uint64_t expired_below_ = 0;  // every older finished turn is forgotten
    std::uint64_t turns_ = 0;
    std::uint64_t waited_ = 0;
};

}  // namespace kvcheck::sim
