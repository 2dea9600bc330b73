// Replay of schedules (docs/replay.md): the reference prefills the prompt from scratch, the
// resumed run starts from a cache assembled from exactly the schedule's reads; both run on one
// backend with prefill chunks ending at the same absolute positions, and are compared bitwise.
#include "cuda_replay/replay.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <utility>

#include "cuda_replay/read_bytes.hpp"
#include "model/core.hpp"

namespace kvcheck::replay {

namespace {

// Prefills tokens [from, to) in chunks that end at absolute multiples of `chunk`.
std::vector<float> prefill_range(Session& session, std::span<const int> tokens, int from, int to, int chunk,
                                 std::vector<float>& hidden) {
    KV_ASSERT(from < to && chunk > 0, "prefill_range() needs a non-empty range and a positive chunk");
    std::vector<float> logits;
    for (int position = from; position < to;) {
        const int end = std::min(to, (position / chunk + 1) * chunk);
        logits = session.prefill(
            tokens.subspan(static_cast<std::size_t>(position), static_cast<std::size_t>(end - position)), hidden);
        position = end;
    }
    KV_ASSERT_EQ(session.length(), to, "prefill stopped early");
    return logits;
}

void decode_greedy(Session& session, RunOutputs& out, std::vector<float> prompt_logits, int steps) {
    out.tokens.push_back(argmax_token(prompt_logits));
    out.logits.push_back(std::move(prompt_logits));
    for (int step = 0; step < steps; ++step) {
        std::vector<float> logits = session.decode(out.tokens.back(), out.hidden);
        out.tokens.push_back(argmax_token(logits));
        out.logits.push_back(std::move(logits));
    }
    out.recaptures = session.recaptures();
}

// From-scratch runs over the token lists that honest sources name, kept while one schedule is
// replayed. Rows [0, end) of a run depend only on its first `end` tokens, so one run over a token
// list serves every source whose tokens are a prefix of it (read_bytes takes only the rows a run
// of exactly source.end tokens writes); a linear state is the state after the last token, so it
// needs a run of exactly its tokens. Needs are planned first, longest first, so that every
// prefix is served by one run and no token list is run twice.
class SourceRuns {
public:
    SourceRuns(const Backend& backend, int chunk) : backend_(backend), chunk_(chunk) {}

    void plan(const TinyModel& model, std::span<const int> tokens, bool exact) {
        needs_.push_back(Need{model, std::vector<int>(tokens.begin(), tokens.end()), exact});
    }

    // The cache of a run that serves (model, tokens, exact); computed now when none is planned.
    const CacheState& cache_for(const TinyModel& model, std::span<const int> tokens, bool exact) {
        if (!planned_) settle();
        Run* run = find(model.fingerprint(), tokens, exact);
        if (run == nullptr) {
            runs_.push_back(Run{model, std::vector<int>(tokens.begin(), tokens.end()), std::nullopt});
            run = &runs_.back();
        }
        if (!run->cache) run->cache = compute(run->model, run->tokens);
        return *run->cache;
    }

    int runs() const { return static_cast<int>(runs_.size()); }

private:
    struct Need {
        TinyModel model;
        std::vector<int> tokens;
        bool exact;
    };
    struct Run {
        TinyModel model;
        std::vector<int> tokens;
        std::optional<CacheState> cache;
    };

    static bool serves(const Run& run, std::uint64_t fingerprint, std::span<const int> tokens, bool exact) {
        if (run.model.fingerprint() != fingerprint || run.tokens.size() < tokens.size()) return false;
        if (exact && run.tokens.size() != tokens.size()) return false;
        return std::equal(tokens.begin(), tokens.end(), run.tokens.begin());
    }

    Run* find(std::uint64_t fingerprint, std::span<const int> tokens, bool exact) {
        for (Run& run : runs_)
            if (serves(run, fingerprint, tokens, exact)) return &run;
        return nullptr;
    }

    // Longest needs first: a shorter prefix then finds the run of a longer list already planned.
    void settle() {
        planned_ = true;
        std::stable_sort(needs_.begin(), needs_.end(),
                         [](const Need& a, const Need& b) { return a.tokens.size() > b.tokens.size(); });
        for (Need& need : needs_)
            if (find(need.model.fingerprint(), need.tokens, need.exact) == nullptr)
                runs_.push_back(Run{std::move(need.model), std::move(need.tokens), std::nullopt});
        needs_.clear();
    }

    CacheState compute(const TinyModel& model, std::span<const int> tokens) const {
        const int length = static_cast<int>(tokens.size());
        if (length == 0) return empty_cache(model.layers(), 0);
        const auto session = backend_.open(model, length);
        std::vector<float> hidden;
        prefill_range(*session, tokens, 0, length, chunk_, hidden);
        return session->save();
    }

    const Backend& backend_;
    int chunk_;
    bool planned_ = false;
    std::vector<Need> needs_;
    std::deque<Run> runs_;  // stable addresses: callers hold the returned caches
};

// The model that computed a read's bytes. An indexer's bytes summarise the keys of a model at
// index_weights_version through the indexer's own projection at weights_version.
TinyModel source_model(const std::vector<LayerSpec>& specs, const Read& read) {
    const Source& src = *read.source;
    if (read.form != model::Form::indexer_state || src.index_weights_version == src.weights_version)
        return TinyModel(specs, src.weights_version);
    return TinyModel(specs, src.index_weights_version).with_layer_version(read.group, src.weights_version);
}

// True when the reference run itself wrote the read's bytes: the source is the request's own
// prompt ("tokens": "request", checked against the prompt), under the reference's weights (for
// an indexer, an index built over KV of those weights too), and not a linear state taken before
// the end of the prompt (the reference keeps only its final state). The reference's rows then
// are those a run over source.tokens[0:source.end] writes, bit for bit, by causality and batch
// invariance; read_bytes takes only the rows such a run writes. Layouts do not matter here: they
// are applied to the bytes afterwards. Any other source is recomputed honestly.
bool from_reference(const Schedule& s, const Read& read) {
    const Source& src = *read.source;
    if (!src.request || src.weights_version != s.weights_version) return false;
    if (read.form == model::Form::indexer_state && src.index_weights_version != src.weights_version) return false;
    if (read.form == model::Form::linear_state && src.end != static_cast<int>(s.tokens.size())) return false;
    const auto end = static_cast<std::size_t>(src.end);
    return src.tokens.size() >= end && end <= s.tokens.size() &&
           std::equal(src.tokens.begin(), src.tokens.begin() + static_cast<std::ptrdiff_t>(end), s.tokens.begin());
}

bool rows_equal(const std::vector<float>& a, const std::vector<float>& b, int from, int to) {
    if (from >= to) return true;
    const auto begin = static_cast<std::size_t>(from) * kModel;
    const auto count = static_cast<std::size_t>(to - from) * kModel;
    KV_ASSERT(begin + count <= a.size() && begin + count <= b.size(), "compared rows lie outside the caches");
    return std::memcmp(a.data() + begin, b.data() + begin, count * sizeof(float)) == 0;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Which part of a layer's cache at the resume point differs, among the parts the next query
// reads (the live region); "compute" when the cache is identical and the backend diverged.
std::string differing_form(const LayerShape& s, const GroupCache& expected, const GroupCache& assembled, int n) {
    switch (s.kind) {
        case LayerKind::full: {
            const int boundary = n / s.segment_tokens * s.segment_tokens;
            if (!rows_equal(expected.comp_k, assembled.comp_k, 0, boundary / s.ratio) ||
                !rows_equal(expected.comp_v, assembled.comp_v, 0, boundary / s.ratio))
                return "compressed_kv";
            if (!rows_equal(expected.raw_k, assembled.raw_k, boundary, n) ||
                !rows_equal(expected.raw_v, assembled.raw_v, boundary, n))
                return "uncompressed_tail";
            return "compute";
        }
        case LayerKind::swa:
        case LayerKind::chunked: {
            const int begin =
                s.kind == LayerKind::swa ? std::max(0, n - s.window_tokens) : n / s.window_tokens * s.window_tokens;
            const bool same = rows_equal(expected.raw_k, assembled.raw_k, begin, n) &&
                              rows_equal(expected.raw_v, assembled.raw_v, begin, n);
            return same ? "compute" : "swa_window";
        }
        case LayerKind::indexer:
            return rows_equal(expected.summary, assembled.summary, 0, n / s.block_tokens) ? "compute" : "indexer_state";
        case LayerKind::linear: return same_bits(expected.state, assembled.state) ? "compute" : "linear_state";
    }
    KV_UNREACHABLE("unknown layer kind");
}

std::uint64_t outputs_hash(const RunOutputs& run) {
    std::uint64_t h = 0x5eed;
    for (const std::vector<float>& logits : run.logits)
        for (float x : logits) {
            std::uint32_t bits = 0;
            std::memcpy(&bits, &x, sizeof bits);
            h = hash_combine(h, bits);
        }
    for (int token : run.tokens) h = hash_combine(h, static_cast<std::uint64_t>(token));
    return h;
}

// The first (position, layer) whose output differs; layers are compared in stacking order, so a
// bad cache is named by its own layer, not by a later layer that only inherits the difference.
std::pair<int, int> first_difference(const RunOutputs& reference, const RunOutputs& resumed, int layers) {
    const std::size_t row = static_cast<std::size_t>(layers) * kModel;
    const std::size_t positions = resumed.hidden.size() / row;
    for (std::size_t i = 0; i < positions; ++i) {
        const std::size_t p = static_cast<std::size_t>(resumed.first) + i;
        if ((p + 1) * row > reference.hidden.size()) break;
        for (int l = 0; l < layers; ++l) {
            const float* a = reference.hidden.data() + p * row + static_cast<std::size_t>(l) * kModel;
            const float* b = resumed.hidden.data() + i * row + static_cast<std::size_t>(l) * kModel;
            // Bit-exact is the point: equal values with other bits (-0.0, NaN payloads) differ here.
            if (std::memcmp(a, b, kModel * sizeof(float)) != 0)  // NOLINT(bugprone-suspicious-memory-comparison)
                return {static_cast<int>(p), l};
        }
    }
    return {-1, -1};
}

}  // namespace

std::string_view agreement_name(Agreement agreement) {
    switch (agreement) {
        case Agreement::agree: return "agree";
        case Agreement::false_alarm: return "false_alarm";
        case Agreement::miss: return "miss";
    }
    return "?";
}

int argmax_token(const std::vector<float>& logits) {
    KV_ASSERT(!logits.empty(), "argmax of no logits");
    int best = 0;
    for (int v = 1; v < static_cast<int>(logits.size()); ++v)
        if (logits[static_cast<std::size_t>(v)] > logits[static_cast<std::size_t>(best)]) best = v;
    return best;
}

ScheduleResult replay_schedule(const Schedule& s, const Backend& backend) {
    const std::vector<LayerSpec> specs = layer_specs(s.groups);
    const TinyModel model(specs, s.weights_version);
    const int prompt = static_cast<int>(s.tokens.size());
    const int capacity = prompt + s.decode_steps;
    const int n = s.resume_len;
    const std::span<const int> tokens(s.tokens);
    KV_ASSERT(n >= 0 && n < prompt, "the loader keeps resume_len inside the prompt");

    // The reference; its caches after the prompt also serve the reads whose bytes it wrote.
    RunOutputs reference;
    CacheState reference_cache;
    {
        const auto session = backend.open(model, capacity);
        std::vector<float> logits =
            prefill_range(*session, tokens, 0, prompt, s.prefill_chunk_tokens, reference.hidden);
        reference_cache = session->save();
        decode_greedy(*session, reference, std::move(logits), s.decode_steps);
    }

    // Every other source is computed from scratch: one model per distinct weights, one run per
    // distinct token list (prefixes share the run of the longest list).
    SourceRuns runs(backend, s.prefill_chunk_tokens);
    std::map<std::tuple<std::uint64_t, std::uint64_t, int>, TinyModel> models;
    const auto model_of = [&](const Read& read) -> const TinyModel& {
        const Source& src = *read.source;
        const bool stale_index =
            read.form == model::Form::indexer_state && src.index_weights_version != src.weights_version;
        const auto key =
            std::make_tuple(src.weights_version, stale_index ? src.index_weights_version : src.weights_version,
                            stale_index ? read.group : -1);
        auto found = models.find(key);
        if (found == models.end()) found = models.emplace(key, source_model(specs, read)).first;
        return found->second;
    };
    const auto source_tokens = [](const Read& read) {
        return std::span<const int>(read.source->tokens).first(static_cast<std::size_t>(read.source->end));
    };
    for (const Read& read : s.reads)
        if (read.source && !from_reference(s, read))
            runs.plan(model_of(read), source_tokens(read), read.form == model::Form::linear_state);

    CacheState assembled = empty_cache(specs, capacity);
    assembled.length = n;
    for (const Read& read : s.reads) {
        const LayerShape& shape = specs[static_cast<std::size_t>(read.group)].shape;
        const CacheState* source = nullptr;
        if (read.source)
            source = from_reference(s, read)
                         ? &reference_cache
                         : &runs.cache_for(model_of(read), source_tokens(read), read.form == model::Form::linear_state);
        const ReadRows rows = rows_seen(shape, read, source, s.layouts[static_cast<std::size_t>(read.group)]);
        place_rows(assembled, shape, read, rows, n);
    }
    RunOutputs resumed;
    resumed.first = n;
    {
        const auto session = backend.open(model, capacity);
        session->load(assembled);
        for (const Read& read : s.reads)
            if (read.moved()) session->migrate(read.group);
        std::vector<float> logits = prefill_range(*session, tokens, n, prompt, s.prefill_chunk_tokens, resumed.hidden);
        decode_greedy(*session, resumed, std::move(logits), s.decode_steps);
    }

    ScheduleResult result;
    result.schedule = s.file;
    result.request = s.request;
    result.oracle_corrupt = s.oracle_corrupt;
    result.recaptures = resumed.recaptures;
    result.reference_hash = outputs_hash(reference);
    result.resumed_hash = outputs_hash(resumed);
    // Bit exact: equal logits and tokens, and every layer's output at every position the resumed
    // run computed. The tiny model has one layer per group, so a bad cache of a layer that no
    // cache-writing layer follows (SWA below only an indexer, for instance) changes the outputs
    // of the positions that read it and no later logit; in the engine every layer's output at a
    // position feeds the caches of every layer above it, so such a difference is a corruption.
    const auto [position, layer] = first_difference(reference, resumed, model.layer_count());
    result.bit_exact = reference.tokens == resumed.tokens && position < 0 &&
                       std::equal(reference.logits.begin(), reference.logits.end(), resumed.logits.begin(),
                                  resumed.logits.end(), same_bits);
    if (!result.bit_exact) {
        Divergence d;
        d.schedule = s.file;
        d.request = s.request;
        d.oracle_corrupt = s.oracle_corrupt;
        d.position = position;
        d.group = layer;
        d.form = "compute";
        if (layer >= 0) {
            const auto l = static_cast<std::size_t>(layer);
            d.group_name = s.groups[l].name;
            // The live region at resume_len lies in rows a run over tokens[0:n] writes, so the
            // reference's caches hold the expected bytes; a linear state needs the state after n.
            const CacheState& expected = specs[l].shape.kind == LayerKind::linear
                                             ? runs.cache_for(model, tokens.first(static_cast<std::size_t>(n)), true)
                                             : reference_cache;
            d.form = differing_form(specs[l].shape, expected.groups[l], assembled.groups[l], n);
        }
        result.divergence = d;
    }
    const bool diverged = !result.bit_exact;
    result.agreement = diverged == s.oracle_corrupt ? Agreement::agree
                       : diverged                   ? Agreement::false_alarm
                                                    : Agreement::miss;
    reference.hidden.clear();
    result.reference = std::move(reference);
    return result;
}

Summary summarize(std::vector<ScheduleResult> results) {
    Summary out;
    for (const ScheduleResult& r : results) {
        ++out.schedules;
        if (r.bit_exact)
            ++out.bit_exact;
        else
            ++out.diverged;
        if (r.divergence) out.divergences.push_back(*r.divergence);
        switch (r.agreement) {
            case Agreement::agree: ++out.agree; break;
            case Agreement::false_alarm: ++out.false_alarm; break;
            case Agreement::miss: ++out.miss; break;
        }
        out.recaptures += r.recaptures;
    }
    KV_ASSERT_EQ(out.agree + out.false_alarm + out.miss, out.schedules, "every schedule has one agreement");
    out.results = std::move(results);
    return out;
}

nlohmann::json summary_json(const Summary& summary, std::string_view backend) {
    const auto hex = [](std::uint64_t h) {
        char text[17];
        std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
        return std::string(text);
    };
    nlohmann::json divergences = nlohmann::json::array();
    for (const Divergence& d : summary.divergences)
        divergences.push_back({{"schedule", d.schedule},
                               {"request", d.request},
                               {"group", d.group_name},
                               {"group_index", d.group},
                               {"form", d.form},
                               {"position", d.position},
                               {"oracle_corrupt", d.oracle_corrupt}});
    nlohmann::json results = nlohmann::json::array();
    for (const ScheduleResult& r : summary.results)
        results.push_back({{"schedule", r.schedule},
                           {"request", r.request},
                           {"bit_exact", r.bit_exact},
                           {"oracle_corrupt", r.oracle_corrupt},
                           {"agreement", agreement_name(r.agreement)},
                           {"recaptures", r.recaptures},
                           {"reference_hash", hex(r.reference_hash)},
                           {"resumed_hash", hex(r.resumed_hash)}});
    return {
        {"backend", backend},
        {"schedules", summary.schedules},
        {"bit_exact", summary.bit_exact},
        {"diverged", summary.diverged},
        {"divergences", divergences},
        {"oracle_agreement", {{"agree", summary.agree}, {"false_alarm", summary.false_alarm}, {"miss", summary.miss}}},
        {"recaptures", summary.recaptures},
        {"results", results}};
}

}  // namespace kvcheck::replay
