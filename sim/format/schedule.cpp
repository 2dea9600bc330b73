// Loader and writer for replay schedules. Every rejection names the file and the JSON pointer of
// the offending value, so a bad exported schedule is one line to fix, never an assertion.
#include "sim/format/schedule.hpp"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string_view>

#include "sim/io/input_error.hpp"
#include "sim/io/json_fields.hpp"

namespace kvcheck::replay {

using nlohmann::json;

std::string_view damage_name(Damage damage) {
    switch (damage) {
        case Damage::none: return "none";
        case Damage::unwritten: return "unwritten";
        case Damage::lost_half: return "lost_half";
        case Damage::lost_block: return "lost_block";
        case Damage::misaligned: return "misaligned";
        case Damage::torn: return "torn";
    }
    return "?";
}

bool Read::moved() const { return std::find(transport.begin(), transport.end(), Transport::load) != transport.end(); }

namespace {

constexpr Damage kAllDamage[] = {Damage::none,       Damage::unwritten,  Damage::lost_half,
                                 Damage::lost_block, Damage::misaligned, Damage::torn};

class Parser {
public:
    explicit Parser(std::string file) : file_(std::move(file)) {}

    [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
        throw sim::InputError(file_, pointer.empty() ? "/" : pointer, message);
    }

    const json& member(const json& object, const std::string& pointer, const char* key) const {
        const json* found = optional_member(object, pointer, key);
        if (found == nullptr) fail(pointer + "/" + key, "missing");
        return *found;
    }

    // A key outside `keys` is refused: it is usually a typo of an optional field, which would
    // otherwise be replayed with its default.
    void known_keys(const json& object, const std::string& pointer,
                    std::initializer_list<std::string_view> keys) const {
        if (!object.is_object()) fail(pointer, "expected an object");
        for (const auto& [key, value] : object.items()) {
            if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
            std::string expected;
            for (std::string_view k : keys) expected += (expected.empty() ? "" : ", ") + std::string(k);
            fail(pointer + "/" + sim::pointer_escape(key),
                 "unknown key \"" + key + "\" (expected one of " + expected + ")");
        }
    }

    const json* optional_member(const json& object, const std::string& pointer, const char* key) const {
        if (!object.is_object()) fail(pointer, "expected an object");
        const auto it = object.find(key);
        return it == object.end() ? nullptr : &*it;
    }

    std::int64_t integer(const json& value, const std::string& pointer, std::int64_t low, std::int64_t high) const {
        if (!value.is_number_integer()) fail(pointer, "expected an integer");
        if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(high))
            fail(pointer, "must be at most " + std::to_string(high));
        const auto x = value.get<std::int64_t>();
        if (x < low || x > high)
            fail(pointer,
                 "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " + std::to_string(x));
        return x;
    }

    int small(const json& value, const std::string& pointer, int low, int high) const {
        return static_cast<int>(integer(value, pointer, low, high));
    }

    std::uint64_t unsigned_integer(const json& value, const std::string& pointer) const {
        if (!value.is_number_integer()) fail(pointer, "expected a non-negative integer");
        if (!value.is_number_unsigned() && value.get<std::int64_t>() < 0) fail(pointer, "must not be negative");
        return value.get<std::uint64_t>();
    }

    std::string text(const json& value, const std::string& pointer) const {
        if (!value.is_string()) fail(pointer, "expected a string");
        return value.get<std::string>();
    }

    const json& array(const json& value, const std::string& pointer, std::size_t max_size) const {
        if (!value.is_array()) fail(pointer, "expected an array");
        if (value.size() > max_size) fail(pointer, "more than " + std::to_string(max_size) + " entries");
        return value;
    }

    std::vector<int> tokens(const json& value, const std::string& pointer) const {
        std::vector<int> out;
        for (std::size_t i = 0; i < array(value, pointer, kMaxTokens).size(); ++i)
            out.push_back(small(value[i], pointer + "/" + std::to_string(i), 0, 255));
        return out;
    }

    std::vector<std::string> strings(const json& value, const std::string& pointer) const {
        std::vector<std::string> out;
        for (std::size_t i = 0; i < array(value, pointer, kMaxReads).size(); ++i)
            out.push_back(text(value[i], pointer + "/" + std::to_string(i)));
        return out;
    }

    // A token range [start, end) within `limit` tokens; a linear state may be empty (start == end).
    void range(const json& object, const std::string& pointer, int limit, bool allow_empty, int& start,
               int& end) const {
        start = small(member(object, pointer, "start"), pointer + "/start", 0, kMaxTokens);
        end = small(member(object, pointer, "end"), pointer + "/end", 0, kMaxTokens);
        if (end > limit)
            fail(pointer + "/end",
                 "end " + std::to_string(end) + " lies beyond the " + std::to_string(limit) + " tokens");
        if (start > end || (start == end && !allow_empty))
            fail(pointer + "/start", "start " + std::to_string(start) + " must be below end " + std::to_string(end));
    }

    model::CacheGroup group(const json& value, const std::string& p, std::size_t index) const;
    void check_groups(const std::vector<model::CacheGroup>& groups, const std::string& pointer) const;
    Read read(const json& value, const std::string& p, const Schedule& s) const;

private:
    std::string file_;
};

model::CacheGroup Parser::group(const json& value, const std::string& p, std::size_t index) const {
    model::CacheGroup g;
    // layers, bytes_per_token_layer, state_bytes_layer and layout_id describe the engine's model;
    // the tiny model has its own dimensions, but they are kept so a schedule reads back whole.
    known_keys(value, p,
               {"name", "kind", "layers", "block_tokens", "segment_tokens", "window_tokens", "compress_ratio",
                "bytes_per_token_layer", "state_bytes_layer", "indexer_top_k", "indexed_group", "layout_id"});
    const json* name = optional_member(value, p, "name");
    g.name = name != nullptr ? text(*name, p + "/name") : "group" + std::to_string(index);
    const std::string kind = text(member(value, p, "kind"), p + "/kind");
    const auto parsed = model::group_kind_from_name(kind);
    if (!parsed) fail(p + "/kind", "unknown kind '" + kind + "' (expected full, swa, chunked, indexer or linear)");
    g.kind = *parsed;
    const auto number = [&](const char* key, int fallback, int low) {
        const json* v = optional_member(value, p, key);
        return v == nullptr ? fallback : small(*v, p + "/" + key, low, kMaxTokens);
    };
    g.block_tokens =
        static_cast<std::uint32_t>(small(member(value, p, "block_tokens"), p + "/block_tokens", 1, kMaxTokens));
    g.segment_tokens = static_cast<std::uint32_t>(number("segment_tokens", static_cast<int>(g.block_tokens), 1));
    g.window_tokens = static_cast<std::uint32_t>(number("window_tokens", 0, 0));
    g.compress_ratio = static_cast<std::uint32_t>(number("compress_ratio", 1, 1));
    g.indexer_top_k = static_cast<std::uint32_t>(number("indexer_top_k", 0, 0));
    const json* indexed = optional_member(value, p, "indexed_group");
    g.indexed_group = indexed == nullptr ? -1 : small(*indexed, p + "/indexed_group", -1, 15);
    const auto count = [&](const char* key, std::uint32_t fallback) {
        const json* v = optional_member(value, p, key);
        if (v == nullptr) return fallback;
        const std::uint64_t n = unsigned_integer(*v, p + "/" + key);
        if (n > UINT32_MAX) fail(p + "/" + key, "expected at most " + std::to_string(UINT32_MAX));
        return static_cast<std::uint32_t>(n);
    };
    g.layers = count("layers", g.layers);
    g.bytes_per_token_layer = count("bytes_per_token_layer", g.bytes_per_token_layer);
    g.state_bytes_layer = count("state_bytes_layer", g.state_bytes_layer);
    const json* layout = optional_member(value, p, "layout_id");
    if (layout != nullptr) g.layout_id = static_cast<std::uint16_t>(small(*layout, p + "/layout_id", 0, 65535));
    return g;
}

void Parser::check_groups(const std::vector<model::CacheGroup>& groups, const std::string& pointer) const {
    if (groups.empty() || groups.size() > 16) fail(pointer, "a model needs 1 to 16 groups");
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const model::CacheGroup& g = groups[i];
        const std::string p = pointer + "/" + std::to_string(i);
        if (g.segment_tokens % g.block_tokens != 0) fail(p + "/segment_tokens", "must be a multiple of block_tokens");
        if (g.kind == model::GroupKind::full && g.segment_tokens % g.compress_ratio != 0)
            fail(p + "/compress_ratio", "must divide segment_tokens");
        if ((g.kind == model::GroupKind::swa || g.kind == model::GroupKind::chunked) && g.window_tokens == 0)
            fail(p + "/window_tokens", "a window group needs window_tokens > 0");
        if (g.kind != model::GroupKind::indexer) continue;
        if (g.indexer_top_k == 0) fail(p + "/indexer_top_k", "an indexer needs indexer_top_k > 0");
        // Layers are stacked in group order, so the KV an indexer routes over must come first.
        if (g.indexed_group < 0 || static_cast<std::size_t>(g.indexed_group) >= i)
            fail(p + "/indexed_group", "must name a full group that comes before the indexer");
        const model::CacheGroup& kv = groups[static_cast<std::size_t>(g.indexed_group)];
        if (kv.kind != model::GroupKind::full) fail(p + "/indexed_group", "must name a full group");
        if (kv.block_tokens != g.block_tokens || kv.segment_tokens != kv.block_tokens)
            fail(p + "/indexed_group",
                 "the indexed group needs segment_tokens == block_tokens == the indexer's block_tokens");
    }
}

bool form_fits(model::Form form, model::GroupKind kind) {
    switch (form) {
        case model::Form::compressed_kv:
        case model::Form::uncompressed_tail: return kind == model::GroupKind::full;
        case model::Form::swa_window: return kind == model::GroupKind::swa || kind == model::GroupKind::chunked;
        case model::Form::indexer_state: return kind == model::GroupKind::indexer;
        case model::Form::linear_state: return kind == model::GroupKind::linear;
        case model::Form::on_disk_prefix: return false;
    }
    return false;
}

Read Parser::read(const json& value, const std::string& p, const Schedule& s) const {
    Read r;
    known_keys(value, p, {"group", "form", "start", "end", "source", "transport", "damage"});
    r.group = small(member(value, p, "group"), p + "/group", 0, static_cast<int>(s.groups.size()) - 1);
    const std::string form = text(member(value, p, "form"), p + "/form");
    const auto parsed = model::form_from_name(form);
    if (!parsed) fail(p + "/form", "unknown form '" + form + "'");
    r.form = *parsed;
    const model::CacheGroup& g = s.groups[static_cast<std::size_t>(r.group)];
    if (!form_fits(r.form, g.kind))
        fail(p + "/form", "form " + form + " is not stored by group " + g.name + " of kind " +
                              std::string(model::group_kind_name(g.kind)));
    const bool linear = r.form == model::Form::linear_state;
    range(value, p, static_cast<int>(s.tokens.size()), linear, r.start, r.end);
    const json& source = member(value, p, "source");
    if (!source.is_null()) {
        const std::string sp = p + "/source";
        known_keys(source, sp, {"tokens", "start", "end", "weights_version", "layout", "index_weights_version"});
        Source src;
        // "request" stands for the schedule's own prompt: the usual source, written once.
        const json& listed = member(source, sp, "tokens");
        src.request = listed.is_string() && listed.get<std::string>() == "request";
        src.tokens = src.request ? s.tokens : tokens(listed, sp + "/tokens");
        range(source, sp, static_cast<int>(src.tokens.size()), linear, src.start, src.end);
        src.weights_version = unsigned_integer(member(source, sp, "weights_version"), sp + "/weights_version");
        src.layout = small(member(source, sp, "layout"), sp + "/layout", 0, 65535);
        const json* index_version = optional_member(source, sp, "index_weights_version");
        src.index_weights_version = index_version == nullptr
                                        ? src.weights_version
                                        : unsigned_integer(*index_version, sp + "/index_weights_version");
        r.source = std::move(src);
    }
    if (const json* transport = optional_member(value, p, "transport")) {
        const std::vector<std::string> names = strings(*transport, p + "/transport");
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (names[i] != "offload" && names[i] != "load")
                fail(p + "/transport/" + std::to_string(i), "expected \"offload\" or \"load\", got '" + names[i] + "'");
            r.transport.push_back(names[i] == "offload" ? Transport::offload : Transport::load);
        }
    }
    if (const json* damage = optional_member(value, p, "damage")) {
        const std::string name = text(*damage, p + "/damage");
        const auto* it = std::find_if(std::begin(kAllDamage), std::end(kAllDamage),
                                      [&](Damage d) { return damage_name(d) == name; });
        if (it == std::end(kAllDamage)) fail(p + "/damage", "unknown damage '" + name + "'");
        r.damage = *it;
    }
    return r;
}

}  // namespace

Schedule parse_schedule(const json& doc, const std::string& file) {
    const Parser in(file);
    Schedule s;
    s.file = file;
    in.known_keys(doc, "",
                  {"schema", "scenario", "policy", "seed", "request", "model", "weights_version", "layouts", "tokens",
                   "resume_len", "prefill_chunk_tokens", "decode_steps", "reads", "events", "faults", "oracle"});
    const std::string schema = in.text(in.member(doc, "", "schema"), "/schema");
    if (schema != "kvcheck.schedule/1") in.fail("/schema", "expected \"kvcheck.schedule/1\", got \"" + schema + "\"");
    if (const json* v = in.optional_member(doc, "", "scenario")) s.scenario = in.text(*v, "/scenario");
    if (const json* v = in.optional_member(doc, "", "policy")) s.policy = in.text(*v, "/policy");
    if (const json* v = in.optional_member(doc, "", "seed")) s.seed = in.unsigned_integer(*v, "/seed");
    if (const json* v = in.optional_member(doc, "", "request")) s.request = in.integer(*v, "/request", 0, INT64_MAX);
    const json& model_json = in.member(doc, "", "model");
    in.known_keys(model_json, "/model", {"preset", "groups"});
    if (const json* v = in.optional_member(model_json, "/model", "preset")) s.preset = in.text(*v, "/model/preset");
    if (const json* groups = in.optional_member(model_json, "/model", "groups")) {
        for (std::size_t i = 0; i < in.array(*groups, "/model/groups", 16).size(); ++i)
            s.groups.push_back(in.group((*groups)[i], "/model/groups/" + std::to_string(i), i));
    } else {
        const model::ModelConfig* preset = model::find_preset(s.preset);
        if (preset == nullptr) in.fail("/model", "no groups and no known preset named '" + s.preset + "'");
        s.groups = preset->groups;
    }
    in.check_groups(s.groups, "/model/groups");
    s.weights_version = in.unsigned_integer(in.member(doc, "", "weights_version"), "/weights_version");
    const json& layouts = in.array(in.member(doc, "", "layouts"), "/layouts", 16);
    if (layouts.size() != s.groups.size())
        in.fail("/layouts", "expected one layout per group (" + std::to_string(s.groups.size()) + "), got " +
                                std::to_string(layouts.size()));
    for (std::size_t i = 0; i < layouts.size(); ++i)
        s.layouts.push_back(in.small(layouts[i], "/layouts/" + std::to_string(i), 0, 65535));
    s.tokens = in.tokens(in.member(doc, "", "tokens"), "/tokens");
    if (s.tokens.empty()) in.fail("/tokens", "a prompt needs at least one token");
    // Engines always recompute the prompt's last token to get its logits.
    s.resume_len = in.small(in.member(doc, "", "resume_len"), "/resume_len", 0, static_cast<int>(s.tokens.size()) - 1);
    s.prefill_chunk_tokens =
        in.small(in.member(doc, "", "prefill_chunk_tokens"), "/prefill_chunk_tokens", 1, kMaxTokens);
    s.decode_steps = in.small(in.member(doc, "", "decode_steps"), "/decode_steps", 0, kMaxDecodeSteps);
    const json& reads = in.array(in.member(doc, "", "reads"), "/reads", kMaxReads);
    for (std::size_t i = 0; i < reads.size(); ++i)
        s.reads.push_back(in.read(reads[i], "/reads/" + std::to_string(i), s));
    if (const json* events = in.optional_member(doc, "", "events")) {
        for (std::size_t i = 0; i < in.array(*events, "/events", 1u << 20).size(); ++i) {
            const json& e = (*events)[i];
            const std::string p = "/events/" + std::to_string(i);
            in.known_keys(e, p, {"step", "what"});
            s.events.push_back({in.unsigned_integer(in.member(e, p, "step"), p + "/step"),
                                in.text(in.member(e, p, "what"), p + "/what")});
        }
    }
    if (const json* faults = in.optional_member(doc, "", "faults")) s.faults = in.strings(*faults, "/faults");
    const json& oracle = in.member(doc, "", "oracle");
    in.known_keys(oracle, "/oracle", {"corrupt", "invariants"});
    const json& corrupt = in.member(oracle, "/oracle", "corrupt");
    if (!corrupt.is_boolean()) in.fail("/oracle/corrupt", "expected true or false");
    s.oracle_corrupt = corrupt.get<bool>();
    if (const json* v = in.optional_member(oracle, "/oracle", "invariants"))
        s.oracle_invariants = in.strings(*v, "/oracle/invariants");
    return s;
}

Schedule load_schedule(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw sim::InputError(path, "", "cannot open the schedule");
    std::ostringstream buffer;
    buffer << file.rdbuf();
    const std::string text = buffer.str();
    return parse_schedule(sim::parse_json_text(text, path), path);
}

json schedule_to_json(const Schedule& s) {
    json groups = json::array();
    for (const model::CacheGroup& g : s.groups) groups.push_back(sim::cache_group_json(g));
    json events = json::array();
    for (const Schedule::Event& e : s.events) events.push_back({{"step", e.step}, {"what", e.what}});
    json reads = json::array();
    for (const Read& r : s.reads) {
        json transport = json::array();
        for (Transport t : r.transport) transport.push_back(t == Transport::offload ? "offload" : "load");
        json source = nullptr;
        if (r.source)
            source = {{"tokens",
                       r.source->request && r.source->tokens == s.tokens ? json("request") : json(r.source->tokens)},
                      {"start", r.source->start},
                      {"end", r.source->end},
                      {"weights_version", r.source->weights_version},
                      {"layout", r.source->layout},
                      {"index_weights_version", r.source->index_weights_version}};
        reads.push_back({{"group", r.group},
                         {"form", model::form_name(r.form)},
                         {"start", r.start},
                         {"end", r.end},
                         {"source", source},
                         {"transport", transport},
                         {"damage", damage_name(r.damage)}});
    }
    return {{"schema", "kvcheck.schedule/1"},
            {"scenario", s.scenario},
            {"policy", s.policy},
            {"seed", s.seed},
            {"request", s.request},
            {"model", {{"preset", s.preset}, {"groups", groups}}},
            {"weights_version", s.weights_version},
            {"layouts", s.layouts},
            {"tokens", s.tokens},
            {"resume_len", s.resume_len},
            {"prefill_chunk_tokens", s.prefill_chunk_tokens},
            {"decode_steps", s.decode_steps},
            {"reads", reads},
            {"events", events},
            {"faults", s.faults},
            {"oracle", {{"corrupt", s.oracle_corrupt}, {"invariants", s.oracle_invariants}}}};
}

}  // namespace kvcheck::replay
