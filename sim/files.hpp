// Output files: every result file is written atomically (temporary file, then rename), so a
// crash or Ctrl-C never leaves a half-written report behind.
#pragma once

#include <string>

namespace kvcheck::sim {

// Writes `content` to `path` via a temporary file in the same folder and a rename.
// Throws InputError naming the path when the folder cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);

// Creates the folder (and parents); throws InputError when it cannot.
void ensure_directory(const std::string& path);

// Throws InputError (file, "", reason) unless `path` is an existing regular file: not a folder, nor
// a FIFO or device that would block or never end.
void require_input_file(const std::string& path);

// Throws InputError when `path`, a file to be written, is a folder, a FIFO or a device. Commands
// call it before their work, so that a bad output path leaves nothing half-done behind.
void require_output_file(const std::string& path);

// Throws InputError when `path`, an output folder, exists and is not a folder; called before the
// work for the same reason.
void require_output_folder(const std::string& path);

// Reads a whole file; throws InputError (file, "", reason) when missing, not a regular file or unreadable.
std::string read_file(const std::string& path);

}  // namespace kvcheck::sim
