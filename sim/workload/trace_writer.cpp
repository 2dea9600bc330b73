// Chunked JSONL output with the same temporary-file-then-rename discipline as write_file_atomic
// (sim/files.hpp), which needs the whole content in memory and so cannot serve million-line traces.
#include "sim/workload/trace_writer.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"

namespace kvcheck::sim {

namespace {

constexpr std::size_t kFlushBytes = 1 << 16;

void append_number(std::string& out, std::uint64_t value) {
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
    KV_ASSERT(ec == std::errc(), "24 characters hold any 64-bit number");
    out.append(digits, end);
}

}  // namespace

void append_mooncake_line(std::string& out, const TraceRecord& record) {
    out += "{\"timestamp\": ";
    append_number(out, record.arrival_ns / 1'000'000);
    out += ", \"input_length\": ";
    append_number(out, record.input_tokens);
    out += ", \"output_length\": ";
    append_number(out, record.output_tokens);
    out += ", \"hash_ids\": [";
    for (std::size_t i = 0; i < record.block_ids.size(); ++i) {
        if (i != 0) out += ", ";
        append_number(out, record.block_ids[i]);
    }
    out += "]}\n";
}

TraceWriter::TraceWriter(const std::string& path, const std::string& source) : path_(path) {
    if (path_.empty()) {
        file_ = stdout;
        return;
    }
    require_output_file(path_, {source});
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    if (!parent.empty()) ensure_directory(parent.string());
    temp_path_ = temporary_path(path_);
    guard_.emplace(temp_path_);
    file_ = std::fopen(temp_path_.c_str(), "wb");
    if (file_ == nullptr) throw InputError(path_, "", std::string("cannot write: ") + std::strerror(errno));
}

TraceWriter::~TraceWriter() {
    if (finished_ || temp_path_.empty()) return;
    std::fclose(file_);
    std::error_code ignored;
    std::filesystem::remove(temp_path_, ignored);
}

void TraceWriter::write(const TraceRecord& record) {
    KV_ASSERT(!finished_, "no writes after finish()");
    append_mooncake_line(buffer_, record);
    if (buffer_.size() >= kFlushBytes) flush_buffer();
}

void TraceWriter::flush_buffer() {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
        throw InputError(path_.empty() ? "<stdout>" : path_, "", "write failed (disk full?)");
    buffer_.clear();
}

void TraceWriter::finish() {
    KV_ASSERT(!finished_, "finish() runs once");
    flush_buffer();
    if (temp_path_.empty()) {
        if (std::fflush(file_) != 0) throw InputError("<stdout>", "", "write failed");
        finished_ = true;
        return;
    }
    const bool closed = std::fclose(file_) == 0;
    finished_ = true;  // the file is closed either way; the checks below clean up after themselves
    std::error_code ec;
    if (!closed) {
        std::filesystem::remove(temp_path_, ec);
        throw InputError(path_, "", "write failed (disk full?)");
    }
    std::filesystem::rename(temp_path_, path_, ec);
    if (ec) {
        const std::string why = ec.message();
        std::filesystem::remove(temp_path_, ec);
        throw InputError(path_, "", "cannot move the finished file into place: " + why);
    }
}

}  // namespace kvcheck::sim
