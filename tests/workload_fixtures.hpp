// What the trace-reader tests share: a fresh scratch folder per test, reading a whole trace into
// records, and the reader options of each format. Each test file gets its own copy (an unnamed
// namespace; inline, so that a file need not use them all).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/workload/trace.hpp"

namespace kvcheck::sim {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test, removed afterwards.
class Workload : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() / ("kvcheck_workload_" + std::string(info->name()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string write(const std::string& name, const std::string& content) const {
        const std::string path = (dir_ / name).string();
        std::ofstream(path, std::ios::binary) << content;
        return path;
    }

    fs::path dir_;
};

inline std::vector<TraceRecord> read_all(const std::string& path, const TraceOptions& options) {
    std::vector<TraceRecord> records;
    const auto reader = TraceReader::open(path, options);
    TraceRecord record;
    while (reader->next(record)) records.push_back(record);
    return records;
}

inline TraceOptions jsonl(TimeUnit unit, std::uint32_t block_tokens) {
    TraceOptions options;
    options.format = TraceFormat::jsonl;
    options.time_unit = unit;
    options.block_tokens = block_tokens;
    return options;
}

inline TraceOptions azure(std::uint64_t seed = 1) {
    TraceOptions options;
    options.format = TraceFormat::azure;
    options.seed = seed;
    return options;
}

}  // namespace
}  // namespace kvcheck::sim
