// What every kvcheck fuzz target checks besides "no crash": bad input surfaces only as an
// InputError whose one-line message names the file it came from, so the CLI can print it as
// `kvcheck: FILE:PLACE: message` and exit 2. Anything else aborts, which libFuzzer keeps as a crash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "sim/io/input_error.hpp"

namespace kvcheck::fuzz {

// Aborts with the reason; libFuzzer then writes the input as crash-<sha1>.
[[noreturn]] inline void contract_broken(const std::string& what) {
    std::fprintf(stderr, "kvcheck fuzz: input contract broken: %s\n", what.c_str());
    std::abort();
}

// An exception that is not an InputError is a finding.
inline void check_other_error(const std::exception& error, const std::string& where) {
    contract_broken(where + " threw a non-input error: " + error.what());
}

// An input error must name `file`, fit on one line and say something.
inline void check_input_error(const sim::InputError& error, const std::string& file) {
    const std::string line = error.what();
    if (line.find('\n') != std::string::npos || line.find('\r') != std::string::npos)
        contract_broken("the message spans several lines: " + line);
    if (error.file() != file)
        contract_broken("the message names \"" + error.file() + "\", not \"" + file + "\": " + line);
    if (error.message().empty()) contract_broken("empty message: " + line);
}

// The folder for the input file: $KVCHECK_FUZZ_TMPDIR, else /dev/shm, else the temporary folder.
// A RAM disk matters: ext4 flushes a truncated-and-rewritten file on close, which made every
// input cost ~7 ms on disk against ~0.4 ms in memory.
inline std::filesystem::path input_folder() {
    if (const char* dir = std::getenv("KVCHECK_FUZZ_TMPDIR"); dir != nullptr && *dir != '\0') return dir;
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
    return std::filesystem::temp_directory_path();
}

// The fuzz input as a file, which is what every kvcheck loader reads. One file per process,
// rewritten for each input and removed at exit.
class InputFile {
public:
    explicit InputFile(const std::string& extension) {
        path_ = (input_folder() / ("kvcheck-fuzz-" + std::to_string(::getpid()) + "-input" + extension)).string();
    }
    ~InputFile() {
        std::error_code ignored;
        std::filesystem::remove(path_, ignored);
    }
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    const std::string& write(const std::uint8_t* data, std::size_t size) {
        std::ofstream out(path_, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        out.close();
        if (!out) contract_broken("cannot write the fuzz input to " + path_);
        return path_;
    }

private:
    std::string path_;
};

}  // namespace kvcheck::fuzz
