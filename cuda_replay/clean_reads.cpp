// Clean reads per group kind; the ranges match the live regions the replay compares when it
// names a divergence (replay.cpp, differing_form).
#include "cuda_replay/clean_reads.hpp"

#include <algorithm>

#include "model/core.hpp"

namespace kvcheck::replay {

std::vector<Read> clean_reads(const Schedule& s) {
    const int n = s.resume_len;
    std::vector<Read> out;
    const auto add = [&](int group, model::Form form, int start, int end) {
        if (start >= end && form != model::Form::linear_state) return;
        Read r;
        r.group = group;
        r.form = form;
        r.start = start;
        r.end = end;
        r.source =
            Source{s.tokens,         true, start, end, s.weights_version, s.layouts[static_cast<std::size_t>(group)],
                   s.weights_version};
        out.push_back(std::move(r));
    };
    for (std::size_t i = 0; i < s.groups.size(); ++i) {
        const model::CacheGroup& g = s.groups[i];
        const int group = static_cast<int>(i);
        const int block = static_cast<int>(g.block_tokens);
        const int window = static_cast<int>(g.window_tokens);
        switch (g.kind) {
            case model::GroupKind::full: {
                const int boundary = n / static_cast<int>(g.segment_tokens) * static_cast<int>(g.segment_tokens);
                add(group, model::Form::compressed_kv, 0, boundary);
                add(group, model::Form::uncompressed_tail, boundary, n);
                break;
            }
            case model::GroupKind::swa: add(group, model::Form::swa_window, std::max(0, n - window), n); break;
            case model::GroupKind::chunked: add(group, model::Form::swa_window, n / window * window, n); break;
            case model::GroupKind::indexer: add(group, model::Form::indexer_state, 0, n / block * block); break;
            case model::GroupKind::linear: add(group, model::Form::linear_state, 0, n); break;
        }
    }
    KV_ASSERT(out.size() <= 2 * s.groups.size(), "at most two reads per group");
    return out;
}

Schedule clean_schedule(const model::ModelConfig& config, std::vector<int> tokens, int resume_len,
                        std::uint64_t weights_version, int prefill_chunk_tokens, int decode_steps) {
    KV_ASSERT(resume_len >= 0 && resume_len < static_cast<int>(tokens.size()), "resume_len inside the prompt");
    Schedule s;
    s.file = config.name + "-resume-" + std::to_string(resume_len) + ".json";
    s.scenario = "hand-built";
    s.policy = "validated";
    s.preset = config.name;
    s.groups = config.groups;
    s.weights_version = weights_version;
    for (const model::CacheGroup& g : config.groups) s.layouts.push_back(g.layout_id);
    s.tokens = std::move(tokens);
    s.resume_len = resume_len;
    s.prefill_chunk_tokens = prefill_chunk_tokens;
    s.decode_steps = decode_steps;
    s.reads = clean_reads(s);
    s.oracle_corrupt = false;
    return s;
}

}  // namespace kvcheck::replay
