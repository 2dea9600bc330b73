// A live progress line for long work (run over big traces, check, fuzz, mutants): rate and, when
// the total is known, an ETA. Only on a terminal; nothing at all with --quiet or when piped.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace kvcheck::cli {

class Progress {
public:
    Progress(bool quiet, std::string label)
        : active_(!quiet && ::isatty(STDERR_FILENO) == 1), label_(std::move(label)),
          started_(std::chrono::steady_clock::now()) {}
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    ~Progress() { done(); }

    // `total` 0 means unknown (no ETA).
    void update(std::uint64_t done_count, std::uint64_t total, const std::string& unit) {
        if (!active_) return;
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        const double rate = seconds > 0 ? static_cast<double>(done_count) / seconds : 0;
        std::string eta;
        if (total > done_count && rate > 0)
            eta =
                "  ETA " + std::to_string(static_cast<long long>(static_cast<double>(total - done_count) / rate)) + "s";
        std::fprintf(stderr, "\r\033[K%s: %llu %s  %.0f/s%s", label_.c_str(),
                     static_cast<unsigned long long>(done_count), unit.c_str(), rate, eta.c_str());
        std::fflush(stderr);
        shown_ = true;
    }

    void done() {
        if (shown_) std::fprintf(stderr, "\r\033[K");
        shown_ = false;
    }

private:
    bool active_;
    bool shown_ = false;
    std::string label_;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace kvcheck::cli
