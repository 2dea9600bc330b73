// Atomic writes and checked reads for everything kvcheck puts on or takes from disk.
#include "sim/io/files.hpp"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "model/core.hpp"
#include "sim/io/input_error.hpp"

namespace kvcheck::sim {

std::string temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

HeldSignals::HeldSignals() {
    sigset_t held;
    sigemptyset(&held);
    for (const int signal : kStopSignals) sigaddset(&held, signal);
    pthread_sigmask(SIG_BLOCK, &held, &previous_);
}

HeldSignals::~HeldSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

namespace {

char guarded_path[4096];  // the temporary file a signal removes
volatile std::sig_atomic_t guarding = 0;

extern "C" void remove_guarded_and_die(int signal) {
    if (guarding != 0) ::unlink(guarded_path);
    std::signal(signal, SIG_DFL);
    std::raise(signal);
}

}  // namespace

TemporaryFileGuard::TemporaryFileGuard(const std::string& path) {
    KV_ASSERT(guarding == 0, "one temporary file guard at a time");
    KV_ASSERT(path.size() < sizeof guarded_path, "a temporary path fits the guard's buffer");
    std::memcpy(guarded_path, path.c_str(), path.size() + 1);
    guarding = 1;
    struct sigaction action {};
    action.sa_handler = remove_guarded_and_die;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &action, &previous_[i]);
}

TemporaryFileGuard::~TemporaryFileGuard() {
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &previous_[i], nullptr);
    guarding = 0;
}

void write_file_atomic(const std::string& path, const std::string& content) {
    write_files_atomic({{path, text_writer(content)}});
}

namespace {

// Removes the temporary files `path.tmp.PID` that a process no longer running left (a crash or
// SIGKILL between writing and renaming), which no one would ever remove otherwise. A live PID's
// file is another writer's, and stays.
void remove_orphaned_temporaries(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path target(path);
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    const std::string prefix = target.filename().string() + ".tmp.";
    for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with(prefix) || name.size() == prefix.size()) continue;
        const std::string digits = name.substr(prefix.size());
        if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
        const pid_t pid = static_cast<pid_t>(std::stol(digits));
        if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
    }
}

}  // namespace

void write_files_atomic(const std::vector<std::pair<std::string, FileWriter>>& files) {
    for (const auto& file : files) {
        const std::string& path = file.first;
        require_output_file(path);
        const std::filesystem::path parent = std::filesystem::path(path).parent_path();
        if (!parent.empty()) ensure_directory(parent.string());
        remove_orphaned_temporaries(path);
    }
    const HeldSignals held;
    std::vector<std::string> temps;
    const auto discard = [&temps](std::size_t from) {
        std::error_code ignored;
        for (std::size_t i = from; i < temps.size(); ++i) std::filesystem::remove(temps[i], ignored);
    };
    for (const auto& [path, write] : files) {
        temps.push_back(temporary_path(path));
        std::ofstream out(temps.back(), std::ios::binary | std::ios::trunc);
        if (!out) {
            const std::string why = std::strerror(errno);
            discard(0);
            throw InputError(path, "", "cannot write: " + why);
        }
        write(out);
        out.flush();
        if (!out) {
            out.close();
            discard(0);
            throw InputError(path, "", "write failed (disk full?)");
        }
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
        std::error_code ec;
        std::filesystem::rename(temps[i], files[i].first, ec);
        if (ec) {
            discard(i);
            throw InputError(files[i].first, "", "cannot move the finished file into place: " + ec.message());
        }
    }
}

void ensure_directory(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return;
    std::filesystem::create_directories(path, ec);
    if (ec) throw InputError(path, "", "cannot create the output folder: " + ec.message());
}

void require_input_file(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status)) throw InputError(path, "", "is a directory, expected a file");
    // status() fails alike for a missing file, a symbolic-link loop and a folder it may not search;
    // each gets its own words, so the user knows what to mend.
    if (ec == std::errc::too_many_symbolic_link_levels)
        throw InputError(path, "", "is a loop of symbolic links (each points on to the next), expected a file");
    if (ec && ec != std::errc::no_such_file_or_directory) throw InputError(path, "", "cannot read: " + ec.message());
    if (!std::filesystem::exists(status)) {
        std::error_code link_ec;
        if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, link_ec)))
            throw InputError(path, "",
                             "is a symbolic link to " + std::filesystem::read_symlink(path, link_ec).string() +
                                 ", which does not exist");
        throw InputError(path, "", "no such file");
    }
    // A FIFO or a device would block or never end.
    if (!std::filesystem::is_regular_file(status))
        throw InputError(path, "", "is not a regular file (a FIFO, device or socket), expected a file");
}

namespace {

// Throws InputError (about `path`) unless `folder`, or the nearest existing folder above it when
// it is missing, is a folder this process may create files in.
void require_writable_folder(const std::string& path, std::filesystem::path folder) {
    std::error_code ec;
    if (folder.empty()) folder = ".";
    folder = std::filesystem::absolute(folder, ec);
    while (!std::filesystem::exists(folder, ec) && folder.has_parent_path() && folder.parent_path() != folder)
        folder = folder.parent_path();
    if (!std::filesystem::is_directory(folder, ec))
        throw InputError(path, "", folder.string() + " is not a directory, so nothing can be written under it");
    if (::access(folder.c_str(), W_OK | X_OK) != 0)
        throw InputError(path, "", "cannot write in " + folder.string() + ": " + std::strerror(errno));
}

}  // namespace

void require_output_file(const std::string& path, const std::vector<std::string>& inputs) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status)) throw InputError(path, "", "is a directory, expected a file to write");
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        throw InputError(path, "", "is not a regular file (a FIFO, device or socket), expected a file to write");
    for (const std::string& input : inputs)
        if (std::filesystem::equivalent(path, input, ec))
            throw InputError(path, "", "is " + input + ", an input of this command; expected another output file");
    require_writable_folder(path, std::filesystem::path(path).parent_path());
}

void require_output_folder(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (std::filesystem::exists(status) && !std::filesystem::is_directory(status))
        throw InputError(path, "", "exists and is not a directory, expected an output folder");
    require_writable_folder(path, path);
}

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (std::filesystem::equivalent(a, b, ec)) return true;
    const std::filesystem::path first = std::filesystem::weakly_canonical(std::filesystem::absolute(a, ec), ec);
    if (ec) return false;
    const std::filesystem::path second = std::filesystem::weakly_canonical(std::filesystem::absolute(b, ec), ec);
    return !ec && first == second;
}

void remove_stale(const std::string& path) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    if (ec) throw InputError(path, "", "cannot remove the result an earlier run left here: " + ec.message());
}

OutputLock::OutputLock(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::string folder = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
    std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a: a stable name for the folder's lock
    for (const char c : folder) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    char name[40];  // "kvcheck-out-" + 16 hex digits + ".lock" + NUL
    std::snprintf(name, sizeof name, "kvcheck-out-%016llx.lock", static_cast<unsigned long long>(hash));
    const std::string lock = (fs::temp_directory_path(ec) / name).string();
    fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) return;  // no temporary folder to lock in: go on unlocked, as before locks
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        char holder[32] = {};
        const ssize_t got = ::pread(fd_, holder, sizeof holder - 1, 0);
        ::close(fd_);
        fd_ = -1;
        const std::string pid = got > 0 ? std::string(holder, static_cast<std::size_t>(got)) : std::string("?");
        throw InputError(path, "",
                         "another kvcheck (PID " + pid.substr(0, pid.find('\n')) +
                             ") is writing into this folder; wait for it to end or give another --out");
    }
    // The PID only makes a second writer's message clearer; the lock holds without it.
    const std::string pid = std::to_string(::getpid()) + "\n";
    [[maybe_unused]] const ssize_t written = ::ftruncate(fd_, 0) == 0 ? ::pwrite(fd_, pid.data(), pid.size(), 0) : -1;
}

OutputLock::~OutputLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

std::string read_file(const std::string& path) {
    require_input_file(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, "", std::string("cannot read: ") + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace kvcheck::sim
