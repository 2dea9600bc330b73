// Binary encoding of explorer checkpoints. Millions of nodes make JSON too slow and too large, so
// fields are fixed-width little-endian and every array carries its length.
#include "sim/check/checkpoint.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <type_traits>

#include "model/core.hpp"
#include "sim/io/input_error.hpp"

namespace kvcheck::sim {

static_assert(std::endian::native == std::endian::little, "checkpoints are written in the host's little-endian layout");

namespace {

constexpr char kMagic[] = "kvcheck.check-checkpoint/4\n";

// A checksum of the bytes before it, so that a damaged file is refused instead of resumed into a
// state the checkpoint never held: the bytes as 8-byte words (the last one zero-padded) and their
// count, folded with hash_combine.
std::uint64_t checksum(const std::string& bytes, std::size_t size) {
    std::uint64_t h = hash_combine(0x636b7074ULL, size);  // "ckpt"
    for (std::size_t at = 0; at < size; at += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes.data() + at, std::min<std::size_t>(8, size - at));
        h = hash_combine(h, word);
    }
    return h;
}

class Writer {
public:
    template <typename T>
    void put(T value) {
        static_assert(std::is_trivially_copyable_v<T>);
        const auto* bytes = reinterpret_cast<const char*>(&value);
        out.append(bytes, sizeof(T));
    }
    void put_text(const std::string& text) {
        put(static_cast<std::uint64_t>(text.size()));
        out += text;
    }
    template <typename T>
    void put_array(const std::vector<T>& values) {
        put(static_cast<std::uint64_t>(values.size()));
        out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
    }
    std::string out;
};

class Reader {
public:
    Reader(const std::string& bytes, const std::string& file, std::size_t start)
        : bytes_(bytes), file_(file), at_(start) {}

    template <typename T>
    T get() {
        T value;
        std::memcpy(&value, take(sizeof(T)), sizeof(T));
        return value;
    }
    std::string get_text() {
        const auto size = get<std::uint64_t>();
        const char* data = take(size);
        return {data, static_cast<std::size_t>(size)};
    }
    template <typename T>
    std::vector<T> get_array() {
        const auto count = get<std::uint64_t>();
        if (count > (bytes_.size() - at_) / sizeof(T)) fail("an array runs past the end of the file");
        std::vector<T> values(static_cast<std::size_t>(count));
        const char* data = take(values.size() * sizeof(T));
        if (!values.empty())
            std::memcpy(values.data(), data, values.size() * sizeof(T));  // data() of an empty vector may be null
        return values;
    }
    bool at_end() const { return at_ == bytes_.size(); }
    [[noreturn]] void fail(const std::string& why) const {
        throw InputError(file_, "byte " + std::to_string(at_), why + " (not a checkpoint written by this kvcheck)");
    }

private:
    const char* take(std::uint64_t size) {
        if (size > bytes_.size() - at_) fail("the file ends early");
        const char* data = bytes_.data() + at_;
        at_ += static_cast<std::size_t>(size);
        return data;
    }
    const std::string& bytes_;
    const std::string& file_;
    std::size_t at_;
};

}  // namespace

std::string encode_checkpoint(const ExploreCheckpoint& c) {
    Writer w;
    w.out = kMagic;
    w.put_text(c.scope);
    w.put_text(c.policy);
    w.put_text(c.target);
    w.put(static_cast<std::uint8_t>(c.keep_graph ? 1 : 0));
    w.put(c.reduction);
    w.put(c.order);
    w.put(c.initial_hash);
    w.put_array(c.parents);
    std::vector<std::uint8_t> kinds;
    std::vector<std::uint32_t> targets;
    std::vector<std::uint32_t> args;
    for (const model::Step& s : c.steps) {
        kinds.push_back(static_cast<std::uint8_t>(s.kind));
        targets.push_back(s.target);
        args.push_back(s.arg);
    }
    w.put_array(kinds);
    w.put_array(targets);
    w.put_array(args);
    w.put_array(c.keys);
    w.put_array(c.key_nodes);
    w.put_array(c.key_depths);
    w.put(c.depth);
    w.put_array(c.level);
    w.put_array(c.level_again);
    w.put_array(c.next);
    w.put(c.transitions);
    w.put(c.stuck_states);
    w.put(c.other_violations);
    w.put(c.depth_cut_states);
    w.put(c.counterexample_node);
    w.put(c.seconds);
    std::vector<std::uint32_t> edge_ends;
    for (const auto& [from, to] : c.edges) {
        edge_ends.push_back(from);
        edge_ends.push_back(to);
    }
    w.put_array(edge_ends);
    w.put(checksum(w.out, w.out.size()));
    return std::move(w.out);
}

bool may_hold_checkpoint(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return true;
    const std::string_view magic = kMagic;
    const std::string_view any_version = magic.substr(0, magic.rfind('/') + 1);  // "kvcheck.check-checkpoint/"
    std::ifstream in(path, std::ios::binary);
    std::string start(any_version.size(), '\0');
    in.read(start.data(), static_cast<std::streamsize>(start.size()));
    return in.gcount() == static_cast<std::streamsize>(start.size()) && start == any_version;
}

ExploreCheckpoint decode_checkpoint(const std::string& bytes, const std::string& file) {
    const std::size_t magic_size = sizeof(kMagic) - 1;
    if (bytes.compare(0, magic_size, kMagic) != 0)
        throw InputError(file, "byte 0",
                         "expected a checkpoint written by kvcheck check (magic \"kvcheck.check-checkpoint/4\")");
    const std::size_t body = bytes.size() - sizeof(std::uint64_t);
    std::uint64_t stored = 0;
    if (bytes.size() >= magic_size + sizeof(stored)) std::memcpy(&stored, bytes.data() + body, sizeof(stored));
    if (bytes.size() < magic_size + sizeof(stored) || stored != checksum(bytes, body))
        throw InputError(file, "",
                         "the checkpoint is damaged: its checksum does not match its contents (truncated or changed "
                         "since it was written)");
    const std::string payload = bytes.substr(0, body);
    Reader r(payload, file, magic_size);
    ExploreCheckpoint c;
    c.scope = r.get_text();
    c.policy = r.get_text();
    c.target = r.get_text();
    c.keep_graph = r.get<std::uint8_t>() != 0;
    c.reduction = r.get<std::uint8_t>();
    c.order = r.get<std::uint8_t>();
    c.initial_hash = r.get<std::uint64_t>();
    c.parents = r.get_array<std::uint32_t>();
    const auto kinds = r.get_array<std::uint8_t>();
    const auto targets = r.get_array<std::uint32_t>();
    const auto args = r.get_array<std::uint32_t>();
    c.keys = r.get_array<std::uint64_t>();
    c.key_nodes = r.get_array<std::uint32_t>();
    c.key_depths = r.get_array<std::uint16_t>();
    c.depth = r.get<std::uint32_t>();
    c.level = r.get_array<std::uint32_t>();
    c.level_again = r.get_array<std::uint8_t>();
    c.next = r.get_array<std::uint32_t>();
    c.transitions = r.get<std::uint64_t>();
    c.stuck_states = r.get<std::uint64_t>();
    c.other_violations = r.get<std::uint64_t>();
    c.depth_cut_states = r.get<std::uint64_t>();
    c.counterexample_node = r.get<std::uint32_t>();
    c.seconds = r.get<double>();
    const auto edge_ends = r.get_array<std::uint32_t>();
    if (!r.at_end()) r.fail("bytes follow the last field");
    const std::size_t nodes = c.parents.size();
    const bool depth_first = c.order == 1;
    const std::size_t keys = c.keys.size();
    if (nodes == 0 || kinds.size() != nodes || targets.size() != nodes || args.size() != nodes ||
        (depth_first ? keys == 0 || keys > nodes : keys != nodes) || c.key_nodes.size() != (c.keep_graph ? keys : 0) ||
        c.key_depths.size() != (depth_first ? keys : 0) || c.level_again.size() != (depth_first ? c.level.size() : 0) ||
        (depth_first && (c.keep_graph || !c.next.empty())) || edge_ends.size() % 2 != 0 || c.level.empty())
        r.fail("its node arrays disagree in length");
    for (std::size_t i = 0; i < nodes; ++i) {
        if (c.reduction > 1 || c.order > 1 || kinds[i] >= model::kStepKindCount || (i > 0 && c.parents[i] >= i))
            r.fail("node " + std::to_string(i) + " is malformed");
        c.steps.push_back({static_cast<model::StepKind>(kinds[i]), targets[i], args[i]});
    }
    const std::vector<std::uint32_t>* id_lists[] = {&c.key_nodes, &c.level, &c.next, &edge_ends};
    for (const std::vector<std::uint32_t>* ids : id_lists)
        for (std::uint32_t id : *ids)
            if (id >= nodes) r.fail("it names node " + std::to_string(id) + " of " + std::to_string(nodes));
    if (c.counterexample_node >= nodes) r.fail("its counterexample node is out of range");
    // Reaching depth d takes a path of d + 1 nodes; the seconds add to the resumed run's.
    if (c.depth >= nodes)
        r.fail("its depth " + std::to_string(c.depth) + " is past its " + std::to_string(nodes) + " nodes");
    if (!std::isfinite(c.seconds) || c.seconds < 0) r.fail("its elapsed seconds are not a finite number of at least 0");
    for (std::size_t i = 0; i < edge_ends.size(); i += 2) c.edges.emplace_back(edge_ends[i], edge_ends[i + 1]);
    return c;
}

}  // namespace kvcheck::sim
