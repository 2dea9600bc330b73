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

// Reads a whole file; throws InputError (file, "", reason) when missing, a folder or unreadable.
std::string read_file(const std::string& path);

}  // namespace kvcheck::sim
