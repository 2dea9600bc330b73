// Encoding: fixed-size fields as their bytes, vectors of trivially copyable rows as a count and
// their bytes, requests and graphs field by field. Decoding resizes the target's vectors, which
// keeps their buffers once a scratch World has seen a state as large.
#include "model/snapshot.hpp"

#include <cstring>
#include <type_traits>

namespace kvcheck::model {

namespace {

// A trip wire for World's layout on the platform CI builds (Debian 12, libstdc++, x86-64): a
// field added to World or Request must be added to encode and decode below, then here.
// (World::derived, grain_tokens, extent_units, extent_step and window_periods, the writers table and Request::writer
// are fixed from a run's initial World on, like the request specs: requests are added at the start and never released.)
static_assert(sizeof(void*) != 8 || sizeof(World) == 1112, "World changed: update model/snapshot.cpp");
static_assert(sizeof(void*) != 8 || sizeof(Request) == 128, "Request changed: update model/snapshot.cpp");

// Encoding runs twice over the same code (StateCodec::write): a Sizer adds up the length, then a
// ByteWriter fills a buffer already that long, with no bounds check per field.
class Sizer {
public:
    template <typename T>
    void pod(const T&) {
        size_ += sizeof(T);
    }
    template <typename T, typename A>
    void rows(const std::vector<T, A>& v) {
        size_ += sizeof(std::uint32_t) + v.size() * sizeof(T);
    }
    void bytes(const void*, std::size_t n) { size_ += n; }
    std::size_t size() const { return size_; }

private:
    std::size_t size_ = 0;
};

class ByteWriter {
public:
    explicit ByteWriter(std::byte* out) : out_(out) {}

    template <typename T>
    void pod(const T& value) {
        static_assert(std::is_trivially_copyable_v<T>);
        std::memcpy(out_, &value, sizeof(T));  // a constant size: no call
        out_ += sizeof(T);
    }
    template <typename T, typename A>
    void rows(const std::vector<T, A>& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        pod(static_cast<std::uint32_t>(v.size()));
        bytes(v.data(), v.size() * sizeof(T));
    }
    void bytes(const void* data, std::size_t n) {
        if (n == 0) return;
        std::memcpy(out_, data, n);
        out_ += n;
    }

private:
    std::byte* out_;
};

class ByteReader {
public:
    explicit ByteReader(const std::byte* in) : in_(in) {}

    template <typename T>
    void pod(T& value) {
        static_assert(std::is_trivially_copyable_v<T>);
        std::memcpy(&value, in_, sizeof(T));
        in_ += sizeof(T);
    }
    template <typename T>
    T pod() {
        T value;
        pod(value);
        return value;
    }
    template <typename T, typename A>
    void rows(std::vector<T, A>& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        v.resize(pod<std::uint32_t>());
        if (v.empty()) return;
        std::memcpy(v.data(), in_, v.size() * sizeof(T));
        in_ += v.size() * sizeof(T);
    }
    const std::byte* at() const { return in_; }
    void skip(std::size_t n) { in_ += n; }

private:
    const std::byte* in_;
};

}  // namespace

StateCodec::StateCodec(const World& initial) {
    for (const Request& r : initial.requests) specs_.push_back(r.spec);
}

template <typename Sink>
void StateCodec::write(const World& w, Sink& o) const {
    o.pod(w.kv_version);
    o.pod(w.config_epoch);
    o.rows(w.layout_shift);
    o.rows(w.segments);
    o.rows(w.free_segment_ids);
    o.pod(w.live_segments);
    o.rows(w.slots);
    for (const auto& list : w.free_slots) o.rows(list);
    o.rows(w.shared_free_slots);
    o.rows(w.disk);
    o.rows(w.free_disk);
    o.pod(static_cast<std::uint64_t>(w.index.cells()));
    o.pod(static_cast<std::uint64_t>(w.index.size()));
    o.bytes(w.index.cell_bytes(), w.index.cells() * 8);
    o.rows(w.io);
    o.rows(w.free_io);
    o.pod(static_cast<std::uint64_t>(w.free_io_low));
    o.pod(static_cast<std::uint32_t>(w.requests.size()));
    for (const Request& r : w.requests) {
        std::uint32_t spec = 0;
        if constexpr (std::is_same_v<Sink, ByteWriter>) {
            while (spec < specs_.size() && specs_[spec] != r.spec) ++spec;
            KV_ASSERT(spec < specs_.size(), "an encoded request's spec is not one of the initial World's");
        }
        o.pod(spec);
        o.pod(r.phase);
        o.pod(r.pos);
        o.pod(r.resume_len);
        o.pod(r.hash_hit_len);
        o.pod(r.verdict);
        o.pod(r.pending_loads);
        o.pod(r.load_failed);
        o.pod(r.gave_up_waiting);
        o.pod(r.uncached);
        o.pod(r.lookups);
        o.pod(r.config_epoch_at_lookup);
        o.rows(r.plan);
        o.rows(r.pinned);
        o.rows(r.owned);
    }
    o.rows(w.free_requests);
    o.pod(static_cast<std::uint32_t>(w.graphs.size()));
    for (const Graph& g : w.graphs) {
        o.pod(g.live);
        o.rows(g.refs);
    }
    o.rows(w.lru_head);
    o.rows(w.lru_tail);
    if (w.limits.tier_eviction) {  // fixed for a run, like the limits themselves
        o.pod(w.disk_lru_head);
        o.pod(w.disk_lru_tail);
    }
    if (w.limits.host_capacity_bytes > 0) {
        o.pod(w.host_head);
        o.pod(w.host_tail);
        o.pod(w.host_used_bytes);
    }
    o.pod(w.moved_under_graph);
    o.pod(w.cross_form_reuse);
    o.pod(w.gpu_used_bytes);
    o.pod(w.disk_used_bytes);
    o.pod(w.bytes_by_form);
}

std::size_t StateCodec::encoded_size(const World& w) const {
    Sizer sizer;
    write(w, sizer);
    return sizer.size();
}

void StateCodec::encode(const World& w, std::byte* out) const {
    ByteWriter writer(out);
    write(w, writer);
}

const std::byte* StateCodec::decode(const std::byte* in, World& w) const {
    ByteReader i(in);
    i.pod(w.kv_version);
    i.pod(w.config_epoch);
    i.rows(w.layout_shift);
    i.rows(w.segments);
    i.rows(w.free_segment_ids);
    i.pod(w.live_segments);
    i.rows(w.slots);
    for (auto& list : w.free_slots) i.rows(list);
    i.rows(w.shared_free_slots);
    i.rows(w.disk);
    i.rows(w.free_disk);
    const auto cells = i.pod<std::uint64_t>();
    const auto used = i.pod<std::uint64_t>();
    w.index.assign_cells(i.at(), cells, used);
    i.skip(cells * 8);
    i.rows(w.io);
    i.rows(w.free_io);
    w.free_io_low = i.pod<std::uint64_t>();
    w.requests.resize(i.pod<std::uint32_t>());
    for (Request& r : w.requests) {
        const auto spec = i.pod<std::uint32_t>();
        KV_ASSERT(spec < specs_.size(), "an encoded state names a request spec this codec does not have");
        if (r.spec != specs_[spec]) r.spec = specs_[spec];
        i.pod(r.phase);
        i.pod(r.pos);
        i.pod(r.resume_len);
        i.pod(r.hash_hit_len);
        i.pod(r.verdict);
        i.pod(r.pending_loads);
        i.pod(r.load_failed);
        i.pod(r.gave_up_waiting);
        i.pod(r.uncached);
        i.pod(r.lookups);
        i.pod(r.config_epoch_at_lookup);
        i.rows(r.plan);
        i.rows(r.pinned);
        i.rows(r.owned);
    }
    i.rows(w.free_requests);
    w.graphs.resize(i.pod<std::uint32_t>());
    for (Graph& g : w.graphs) {
        i.pod(g.live);
        i.rows(g.refs);
    }
    i.rows(w.lru_head);
    i.rows(w.lru_tail);
    if (w.limits.tier_eviction) {
        i.pod(w.disk_lru_head);
        i.pod(w.disk_lru_tail);
    }
    if (w.limits.host_capacity_bytes > 0) {
        i.pod(w.host_head);
        i.pod(w.host_tail);
        i.pod(w.host_used_bytes);
    }
    i.pod(w.moved_under_graph);
    i.pod(w.cross_form_reuse);
    i.pod(w.gpu_used_bytes);
    i.pod(w.disk_used_bytes);
    i.pod(w.bytes_by_form);
    return i.at();
}

}  // namespace kvcheck::model
