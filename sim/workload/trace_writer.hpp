// Writes requests as Mooncake-style JSONL in bounded memory: lines gather in a small buffer that is
// flushed as it fills, to stdout or to a temporary file that is renamed into place at finish().
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "sim/io/files.hpp"
#include "sim/workload/trace.hpp"

namespace kvcheck::sim {

// Appends one line: {"timestamp": MS, "input_length": N, "output_length": N, "hash_ids": [...]}
// with the arrival floored to whole milliseconds, as Mooncake writes it.
void append_mooncake_line(std::string& out, const TraceRecord& record);

class TraceWriter {
public:
    // An empty path writes to stdout. Throws InputError when the temporary file cannot be created.
    // `source`: the trace being rewritten, if any; `path` must not be it (InputError).
    explicit TraceWriter(const std::string& path, const std::string& source = "");
    // A file never finished is removed, so no half-written trace is left behind; Ctrl-C removes it too.
    ~TraceWriter();
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;

    void write(const TraceRecord& record);
    void finish();  // flushes; for a file, renames the temporary file onto the path

private:
    void flush_buffer();

    std::string path_;
    std::string temp_path_;
    std::optional<TemporaryFileGuard> guard_;
    std::FILE* file_ = nullptr;
    std::string buffer_;
    bool finished_ = false;
};

}  // namespace kvcheck::sim
