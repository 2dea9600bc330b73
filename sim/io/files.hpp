// Output files: every result file is written atomically (temporary file, then rename), so a
// crash or Ctrl-C never leaves a half-written report behind.
#pragma once

#include <functional>
#include <iterator>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <signal.h>

namespace kvcheck::sim {

// The signals that stop kvcheck: held while results are written, handled by fuzz and check.
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

// The temporary file `path` is written to before it is renamed into place.
std::string temporary_path(const std::string& path);

// While alive, holds SIGINT, SIGTERM and SIGHUP back from the calling thread, so that what it
// writes meanwhile (one file, or a run's report, metrics and timeline) is written whole: a signal
// that arrives takes effect, handled or fatal, when the scope ends. Scopes nest.
class HeldSignals {
public:
    HeldSignals();
    ~HeldSignals();
    HeldSignals(const HeldSignals&) = delete;
    HeldSignals& operator=(const HeldSignals&) = delete;

private:
    sigset_t previous_;
};

// While alive, a SIGINT, SIGTERM or SIGHUP first removes the temporary file `path` and then ends
// the process as the signal would have: for a file written in chunks over a long time (a
// synthesized trace), where holding signals would leave Ctrl-C unanswered. One at a time; only in
// a process that has no handler of its own for these signals.
class TemporaryFileGuard {
public:
    explicit TemporaryFileGuard(const std::string& path);
    ~TemporaryFileGuard();
    TemporaryFileGuard(const TemporaryFileGuard&) = delete;
    TemporaryFileGuard& operator=(const TemporaryFileGuard&) = delete;

private:
    struct sigaction previous_[std::size(kStopSignals)];
};

// Writes `content` to `path` via a temporary file in the same folder and a rename, with signals
// held; creates missing parent folders. Throws InputError naming the path when it cannot write.
void write_file_atomic(const std::string& path, const std::string& content);

// Writes a file's content to the stream it is given: a large file is made as it is written,
// never held whole.
using FileWriter = std::function<void(std::ostream&)>;

// The writer of a text held whole; the text must outlive the writer.
inline FileWriter text_writer(const std::string& content) {
    return [&content](std::ostream& out) { out.write(content.data(), static_cast<std::streamsize>(content.size())); };
}

// Writes (path, writer) pairs as one group: every temporary file first, then the renames, with
// signals held throughout. When a temporary file cannot be written (a full disk), none of the
// paths changes.
void write_files_atomic(const std::vector<std::pair<std::string, FileWriter>>& files);

// Creates the folder (and parents); throws InputError when it cannot.
void ensure_directory(const std::string& path);

// Throws InputError (file, "", reason) unless `path` is an existing regular file: not a folder, nor
// a FIFO or device that would block or never end.
void require_input_file(const std::string& path);

// Throws InputError when `path`, a file to be written, is a folder, a FIFO or a device, or when
// the folder it goes into (or, when missing, the nearest folder above it) cannot be written.
// Commands call it before their work, so that a bad output path costs no work and leaves nothing
// half-done behind. `inputs` are the files the command reads: an output that is one of them (by
// any path) is refused too, as writing it, or removing an earlier result there, would destroy it.
void require_output_file(const std::string& path, const std::vector<std::string>& inputs = {});

// Throws InputError when `path`, an output folder, exists and is not a writable folder, or is
// missing and the nearest folder above it cannot be written; called before the work likewise.
void require_output_folder(const std::string& path);

// Whether two paths name one file: the same file when both exist, else the same path once
// made absolute and normal (so an output not yet written is compared too).
bool same_file(const std::string& a, const std::string& b);

// Removes `path` if it exists (a result an earlier run left that this run does not replace);
// throws InputError when it cannot.
void remove_stale(const std::string& path);

// While alive, this process alone among kvcheck processes on the machine writes into the output
// folder `path` (run, compare, check and fuzz take one on their --out): a second one is refused
// at once, naming the first, instead of its files landing beside the first one's. The lock is a
// flock on a file in the temporary folder named after the folder's absolute path, so no file
// appears in the output folder, which may not exist yet; the kernel frees it when the process ends.
class OutputLock {
public:
    explicit OutputLock(const std::string& path);
    ~OutputLock();
    OutputLock(const OutputLock&) = delete;
    OutputLock& operator=(const OutputLock&) = delete;

private:
    int fd_ = -1;
};

// Reads a whole file; throws InputError (file, "", reason) when missing, not a regular file or unreadable.
std::string read_file(const std::string& path);

}  // namespace kvcheck::sim
