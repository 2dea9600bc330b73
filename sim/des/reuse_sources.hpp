// Where a resume's tokens came from: the GPU, or host memory or disk through a load made for the
// reading request (report.json `reused_tokens_by_source`, docs/metrics.md). The simulator marks
// each completed load with its request, the entry's epoch and its tier; a read counts a token
// under disk when an entry it takes the token from was loaded from disk for it, else under host
// likewise, else under gpu.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "model/world.hpp"
#include "sim/report/metrics.hpp"

namespace kvcheck::sim {

class ReuseSources {
public:
    // A load of entry `segment` for the request `uid` completed at `epoch` from tier 0 (host) or 1 (disk).
    void loaded(std::uint32_t segment, std::uint32_t uid, std::uint32_t epoch, std::uint8_t tier) {
        if (marks_.size() <= segment) marks_.resize(segment + 1);
        marks_[segment] = {uid + 1, epoch, tier};
    }

    // Adds the read of request `q` (uid `uid`) to `by_source` (indexed as kReuseSources);
    // `any_loaded`: a load for it completed, else every token came from the GPU.
    void count_read(const model::Request& q, std::uint32_t uid, bool any_loaded,
                    std::array<std::uint64_t, kReuseSources.size()>& by_source) {
        if (!any_loaded) {
            by_source[kFromGpu] += q.resume_len;
            return;
        }
        ranges_[0].clear();
        ranges_[1].clear();
        for (const model::PlanEntry& e : q.plan) {
            if (e.segment >= marks_.size() || marks_[e.segment].uid_plus_1 != uid + 1 ||
                marks_[e.segment].epoch != e.epoch)
                continue;
            const std::uint32_t end = std::min(e.end, q.resume_len);
            if (e.start < end) ranges_[marks_[e.segment].tier].emplace_back(e.start, end);
        }
        const std::uint64_t disk = covered(ranges_[1]);
        ranges_[1].insert(ranges_[1].end(), ranges_[0].begin(), ranges_[0].end());
        const std::uint64_t loaded = covered(ranges_[1]);
        by_source[kFromDisk] += disk;
        by_source[kFromHost] += loaded - disk;
        by_source[kFromGpu] += q.resume_len - loaded;
    }

private:
    struct Mark {
        std::uint32_t uid_plus_1 = 0;  // 0: no load marked
        std::uint32_t epoch = 0;
        std::uint8_t tier = 0;
    };
    using Ranges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

    // Tokens in the union of the ranges (sorted in place).
    static std::uint64_t covered(Ranges& ranges) {
        std::sort(ranges.begin(), ranges.end());
        std::uint64_t n = 0;
        std::uint32_t reached = 0;
        for (const auto& [start, end] : ranges) {
            if (end > std::max(start, reached)) n += end - std::max(start, reached);
            reached = std::max(reached, end);
        }
        return n;
    }

    std::vector<Mark> marks_;       // by segment id: the last completed load of it for a request
    std::array<Ranges, 2> ranges_;  // count_read's scratch, by tier (0 host, 1 disk)
};

}  // namespace kvcheck::sim
