// Sessions: the linker that finds turns in a trace's ids, and the book the simulator keeps of them.
#include "sim/workload/sessions.hpp"

#include <utility>

namespace kvcheck::sim {

namespace {

constexpr std::uint64_t kChainSeed = 0x73657373696f6eULL;  // "session"

}  // namespace

void SessionLinker::forget(std::uint64_t index, const Seen& seen) {
    for (const std::uint64_t key : seen.keys) {
        const auto it = holder_.find(key);
        if (it != holder_.end() && it->second == index) holder_.erase(it);
    }
    if (seen.turn) {
        const auto it = turn_.find(seen.keys.back());
        if (it != turn_.end() && it->second == index) turn_.erase(it);
    }
}

std::optional<SessionLinker::Link> SessionLinker::link(const TraceRecord& record) {
    const std::uint64_t index = next_index_++;
    if (window_.size() == kSessionWindow) {
        forget(index - kSessionWindow, window_.front());
        window_.pop_front();
    }
    // Chained keys of every block: block i's key hashes ids 0..i, so equal keys mean equal prefixes.
    keys_.clear();
    std::uint64_t key = kChainSeed;
    for (const std::uint64_t id : record.block_ids) keys_.push_back(key = hash_combine(key, id));

    // The longest whole prompt of a recent turn that this prompt starts with.
    std::optional<Link> found;
    for (std::size_t k = keys_.size(); k > 0 && !found; --k) {
        const auto it = turn_.find(keys_[k - 1]);
        if (it == turn_.end()) continue;
        const Seen& parent = window_[window_.size() - (index - it->second)];
        if (record.input_tokens >= parent.tokens)
            found = Link{it->second, static_cast<std::uint32_t>(k)};
        else
            break;  // the latest turn with this prompt gave an answer the prompt does not hold
    }

    Seen self;
    const std::uint32_t whole = record.input_tokens / record.block_tokens;
    self.keys.assign(keys_.begin(), keys_.begin() + whole);
    self.turn = whole > 0 && !holder_.contains(self.keys.back());
    self.tokens = record.input_tokens + record.output_tokens;
    for (const std::uint64_t k : self.keys) holder_[k] = index;
    if (self.turn) turn_[self.keys.back()] = index;
    window_.push_back(std::move(self));
    return found;
}

std::optional<SessionBook::Due> SessionBook::due(const TraceRecord& record, std::uint64_t now) {
    const std::uint64_t index = linker_.linked();
    const std::optional<SessionLinker::Link> link = linker_.link(record);
    // Forget finished requests that no later one can continue; unfinished ones go at their finish.
    for (; old(expired_below_); ++expired_below_) {
        const auto it = book_.find(expired_below_);
        if (it != book_.end() && it->second.finished_ns) book_.erase(it);
    }
    Turn& turn = book_[index];
    turn.link = link;
    if (!turn.link) return Due{index, now};
    ++turns_;
    Turn& parent = book_.at(turn.link->parent);  // within the window, so still in the book
    if (parent.finished_ns) {
        turn.prior = parent.spec;
        const std::uint64_t at = std::max(now, *parent.finished_ns + think_ns_);
        if (at == now) return Due{index, now};
        ++waited_;
        turn.held = record;
        return Due{index, at};
    }
    ++waited_;
    parent.waiting.push_back(index);
    turn.held = record;
    return std::nullopt;
}

std::shared_ptr<const model::RequestSpec> SessionBook::spec(std::uint64_t index, std::uint32_t uid,
                                                            const TraceRecord& record) {
    Turn& turn = book_.at(index);
    turn.spec = turn.prior
                    ? std::make_shared<model::RequestSpec>(
                          model::make_turn_spec(uid, std::move(turn.prior), turn.link->shared_blocks, record.block_ids,
                                                record.block_tokens, record.input_tokens, record.output_tokens))
                    : std::make_shared<model::RequestSpec>(model::make_request_spec(
                          uid, record.block_ids, record.block_tokens, record.input_tokens, record.output_tokens));
    return turn.spec;
}

std::vector<SessionBook::Due> SessionBook::finished(std::uint64_t index, std::uint64_t now) {
    const auto it = book_.find(index);
    KV_ASSERT(it != book_.end(), "a request finished that the session book does not hold");
    Turn& turn = it->second;
    KV_ASSERT(!turn.finished_ns, "a turn finished twice (a forked sampled answer is not the turn)");
    turn.finished_ns = now;
    std::vector<Due> released;
    for (const std::uint64_t later : turn.waiting) {
        book_.at(later).prior = turn.spec;
        released.push_back({later, now + think_ns_});
    }
    turn.waiting.clear();
    if (old(index)) book_.erase(it);
    return released;
}

TraceRecord SessionBook::take(std::uint64_t index) {
    Turn& turn = book_.at(index);
    KV_ASSERT(turn.held.has_value(), "a turn arrived that was not held");
    TraceRecord record = std::move(*turn.held);
    turn.held.reset();
    return record;
}

}  // namespace kvcheck::sim
