// Read assembly for the resumed run (see read_bytes.hpp). Damage is applied to the stored rows,
// misalignment to the address the reader uses, and layouts to the byte order in between.
#include "cuda_replay/read_bytes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "model/core.hpp"

namespace kvcheck::replay {

namespace {

constexpr int kMisalignFloats = 64 / static_cast<int>(sizeof(float));

int ceil_div(int a, int b) { return (a + b - 1) / b; }

int planes_of(model::Form form) {
    return form == model::Form::indexer_state || form == model::Form::linear_state ? 1 : 2;
}

// First row index (entry, token or block) a claimed or source range starts at.
int first_row(const LayerShape& shape, model::Form form, int start) {
    switch (form) {
        case model::Form::compressed_kv: return start / shape.ratio;
        case model::Form::indexer_state: return start / shape.block_tokens;
        case model::Form::linear_state: return 0;
        case model::Form::uncompressed_tail:
        case model::Form::swa_window:
        case model::Form::on_disk_prefix: return start;
    }
    KV_UNREACHABLE("unknown form");
}

// The cache arrays a form's planes live in (Cache is GroupCache or const GroupCache).
template <typename Cache>
auto planes_in(Cache& g, model::Form form) {
    using Planes = std::vector<decltype(&g.raw_k)>;
    switch (form) {
        case model::Form::compressed_kv: return Planes{&g.comp_k, &g.comp_v};
        case model::Form::uncompressed_tail:
        case model::Form::swa_window: return Planes{&g.raw_k, &g.raw_v};
        case model::Form::indexer_state: return Planes{&g.summary};
        case model::Form::linear_state: return Planes{&g.state};
        case model::Form::on_disk_prefix: break;
    }
    KV_UNREACHABLE("form without cache arrays");
}

// A linear state [head][i][column] as rows [i][head * kHeadDim + column], and back.
int state_index(int row, int feature) {
    return (feature / kHeadDim) * kHeadDim * kHeadDim + row * kHeadDim + feature % kHeadDim;
}

std::size_t row_offset(const ReadRows& r, int plane, int row) {
    return (static_cast<std::size_t>(plane) * static_cast<std::size_t>(r.rows) + static_cast<std::size_t>(row)) *
           kModel;
}
float* at(ReadRows& r, int plane, int row) { return r.data.data() + row_offset(r, plane, row); }
const float* at(const ReadRows& r, int plane, int row) { return r.data.data() + row_offset(r, plane, row); }

void zero_rows(ReadRows& r, int from, int to) {
    for (int plane = 0; plane < r.planes; ++plane)
        for (int row = std::max(0, from); row < to; ++row) std::fill_n(at(r, plane, row), kModel, 0.0f);
}

// Rows of one block for `lost_block` damage.
int rows_per_block(const LayerShape& shape, model::Form form, int rows) {
    switch (form) {
        case model::Form::compressed_kv: return std::max(1, shape.block_tokens / shape.ratio);
        case model::Form::indexer_state: return 1;
        case model::Form::linear_state: return rows;  // a checkpointed state is one block
        case model::Form::uncompressed_tail:
        case model::Form::swa_window:
        case model::Form::on_disk_prefix: return shape.block_tokens;
    }
    KV_UNREACHABLE("unknown form");
}

// Rows (entries, tokens, blocks) a run over exactly `length` tokens has written: compressed
// entries of completed segments only, summaries of completed blocks only.
int written_rows(const LayerShape& shape, model::Form form, int length) {
    switch (form) {
        case model::Form::compressed_kv: return length / shape.segment_tokens * shape.segment_tokens / shape.ratio;
        case model::Form::indexer_state: return length / shape.block_tokens;
        case model::Form::linear_state: return kHeadDim;
        case model::Form::uncompressed_tail:
        case model::Form::swa_window:
        case model::Form::on_disk_prefix: return length;
    }
    KV_UNREACHABLE("unknown form");
}

// The rows the source wrote, cut or zero-padded to the claimed row count. The cache may come from
// a longer run (a longer token list, or the reference over the whole prompt): rows that a run
// over exactly source.end tokens would not have written read as zeros, as they would there.
ReadRows source_rows(const LayerShape& shape, const Read& read, const CacheState* source_cache) {
    ReadRows out;
    out.planes = planes_of(read.form);
    out.rows = claimed_rows(shape, read.form, read.start, read.end);
    out.data.assign(static_cast<std::size_t>(out.planes) * static_cast<std::size_t>(out.rows) * kModel, 0.0f);
    if (!read.source || source_cache == nullptr) return out;
    const Source& src = *read.source;
    const GroupCache& g = source_cache->groups[static_cast<std::size_t>(read.group)];
    const int first = first_row(shape, read.form, src.start);
    KV_ASSERT(read.form != model::Form::linear_state || source_cache->length == src.end,
              "a linear state must come from a run of exactly source.end tokens");
    const int available = std::max(0, std::min({out.rows, claimed_rows(shape, read.form, src.start, src.end),
                                                written_rows(shape, read.form, src.end) - first}));
    const auto arrays = planes_in(g, read.form);
    for (int plane = 0; plane < out.planes; ++plane)
        for (int row = 0; row < available; ++row)
            for (int f = 0; f < kModel; ++f) {
                const std::vector<float>& a = *arrays[static_cast<std::size_t>(plane)];
                at(out, plane, row)[f] =
                    read.form == model::Form::linear_state
                        ? a[static_cast<std::size_t>(state_index(row, f))]
                        : a[static_cast<std::size_t>(first + row) * kModel + static_cast<std::size_t>(f)];
            }
    return out;
}

void damage_rows(ReadRows& r, const LayerShape& shape, model::Form form, Damage damage) {
    switch (damage) {
        case Damage::none:
        case Damage::misaligned: return;
        case Damage::unwritten: zero_rows(r, 0, r.rows); return;
        case Damage::lost_half: zero_rows(r, r.rows / 2, r.rows); return;
        case Damage::lost_block: zero_rows(r, r.rows - rows_per_block(shape, form, r.rows), r.rows); return;
        // A load that stopped short (F2 partial, taken as complete): the rows past the first
        // half never arrived, and the fresh slot holds zeros there.
        case Damage::torn: zero_rows(r, r.rows / 2, r.rows); return;
    }
}

std::vector<int> feature_permutation(int layout) {
    std::vector<int> p(kModel);
    for (int f = 0; f < kModel; ++f) p[static_cast<std::size_t>(f)] = f;
    Rng rng(hash_combine(0x1a7047u, static_cast<std::uint64_t>(layout)));
    for (std::size_t i = p.size() - 1; i > 0; --i) std::swap(p[i], p[static_cast<std::size_t>(rng.below(i + 1))]);
    return p;
}

std::size_t layout_offset(int layout, int rows, int plane, int row, int stored_feature) {
    const std::size_t plane_base = static_cast<std::size_t>(plane) * static_cast<std::size_t>(rows) * kModel;
    if (layout % 2 == 1)
        return plane_base + static_cast<std::size_t>(row) * kModel + static_cast<std::size_t>(stored_feature);
    const int head = stored_feature / kHeadDim;
    return plane_base +
           (static_cast<std::size_t>(head) * static_cast<std::size_t>(rows) + static_cast<std::size_t>(row)) *
               kHeadDim +
           static_cast<std::size_t>(stored_feature % kHeadDim);
}

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

int claimed_rows(const LayerShape& shape, model::Form form, int start, int end) {
    switch (form) {
        case model::Form::compressed_kv: return ceil_div(end, shape.ratio) - start / shape.ratio;
        case model::Form::indexer_state: return ceil_div(end, shape.block_tokens) - start / shape.block_tokens;
        case model::Form::linear_state: return kHeadDim;
        case model::Form::uncompressed_tail:
        case model::Form::swa_window:
        case model::Form::on_disk_prefix: return end - start;
    }
    KV_UNREACHABLE("unknown form");
}

std::vector<float> encode_layout(const ReadRows& rows, int layout) {
    const std::vector<int> perm = feature_permutation(layout);
    std::vector<float> out(rows.data.size());
    for (int plane = 0; plane < rows.planes; ++plane)
        for (int row = 0; row < rows.rows; ++row)
            for (int f = 0; f < kModel; ++f)
                out[layout_offset(layout, rows.rows, plane, row, perm[static_cast<std::size_t>(f)])] =
                    at(rows, plane, row)[f];
    return out;
}

ReadRows decode_layout(const std::vector<float>& bytes, int planes, int rows, int layout) {
    const std::vector<int> perm = feature_permutation(layout);
    ReadRows out{planes, rows, std::vector<float>(bytes.size())};
    KV_ASSERT_EQ(bytes.size(), static_cast<std::size_t>(planes) * static_cast<std::size_t>(rows) * kModel,
                 "buffer size");
    for (int plane = 0; plane < planes; ++plane)
        for (int row = 0; row < rows; ++row)
            for (int f = 0; f < kModel; ++f)
                at(out, plane, row)[f] =
                    bytes[layout_offset(layout, rows, plane, row, perm[static_cast<std::size_t>(f)])];
    return out;
}

std::vector<float> carry(const std::vector<float>& bytes, const std::vector<Transport>& steps) {
    std::vector<float> device = bytes;
    std::unique_ptr<std::FILE, FileCloser> disk;
    for (Transport step : steps) {
        if (step == Transport::offload) {
            std::vector<float> host(device.size());
            std::memcpy(host.data(), device.data(), device.size() * sizeof(float));
            disk.reset(std::tmpfile());
            if (!disk || std::fwrite(host.data(), sizeof(float), host.size(), disk.get()) != host.size() ||
                std::fflush(disk.get()) != 0)
                throw std::runtime_error("replay: cannot write the offload file");
            continue;
        }
        // A load without an offload in this read's history reloads the copy made before it.
        if (!disk) {
            disk.reset(std::tmpfile());
            if (!disk || std::fwrite(device.data(), sizeof(float), device.size(), disk.get()) != device.size())
                throw std::runtime_error("replay: cannot write the offload file");
        }
        std::vector<float> host(device.size());
        std::rewind(disk.get());
        if (std::fread(host.data(), sizeof(float), host.size(), disk.get()) != host.size())
            throw std::runtime_error("replay: cannot read the offload file back");
        std::vector<float> reloaded(host.size());
        std::memcpy(reloaded.data(), host.data(), host.size() * sizeof(float));
        device.swap(reloaded);
    }
    KV_ASSERT_EQ(device.size(), bytes.size(), "transport changed the size");
    return device;
}

ReadRows rows_seen(const LayerShape& shape, const Read& read, const CacheState* source_cache, int reader_layout) {
    ReadRows stored = source_rows(shape, read, source_cache);
    damage_rows(stored, shape, read.form, read.damage);
    const int writer_layout = read.source ? read.source->layout : reader_layout;
    std::vector<float> bytes = carry(encode_layout(stored, writer_layout), read.transport);
    if (read.damage == Damage::misaligned) {
        // The reader's base address is 64 bytes past the buffer's start; past the end it sees zeros.
        const std::size_t shift = std::min(bytes.size(), static_cast<std::size_t>(kMisalignFloats));
        std::rotate(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(shift), bytes.end());
        std::fill(bytes.end() - static_cast<std::ptrdiff_t>(shift), bytes.end(), 0.0f);
    }
    return decode_layout(bytes, stored.planes, stored.rows, reader_layout);
}

void place_rows(CacheState& cache, const LayerShape& shape, const Read& read, const ReadRows& rows, int resume_len) {
    GroupCache& g = cache.groups[static_cast<std::size_t>(read.group)];
    if (read.form == model::Form::linear_state) {
        if (read.end != resume_len) return;
        for (int row = 0; row < rows.rows; ++row)
            for (int f = 0; f < kModel; ++f)
                g.state[static_cast<std::size_t>(state_index(row, f))] = at(rows, 0, row)[f];
        return;
    }
    const auto arrays = planes_in(g, read.form);
    const int first = first_row(shape, read.form, read.start);
    for (int plane = 0; plane < rows.planes; ++plane) {
        std::vector<float>& target = *arrays[static_cast<std::size_t>(plane)];
        const int capacity_rows = static_cast<int>(target.size() / kModel);
        for (int row = 0; row < rows.rows && first + row < capacity_rows; ++row)
            std::copy_n(at(rows, plane, row), kModel, target.data() + static_cast<std::size_t>(first + row) * kModel);
    }
}

}  // namespace kvcheck::replay
