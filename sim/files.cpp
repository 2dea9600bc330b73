// Atomic writes and checked reads for everything kvcheck puts on or takes from disk.
#include "sim/files.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "sim/input_error.hpp"

namespace kvcheck::sim {

void write_file_atomic(const std::string& path, const std::string& content) {
    require_output_file(path);
    const std::string temp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out) throw InputError(path, "", std::string("cannot write: ") + std::strerror(errno));
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        out.flush();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(temp, ignored);
            throw InputError(path, "", "write failed (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    if (ec) {
        const std::string why = ec.message();
        std::filesystem::remove(temp, ec);
        throw InputError(path, "", "cannot move the finished file into place: " + why);
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
    if (!std::filesystem::exists(status)) throw InputError(path, "", "no such file");
    // A FIFO or a device would block or never end.
    if (!std::filesystem::is_regular_file(status)) throw InputError(path, "", "is not a regular file (a FIFO, device or socket), expected a file");
}

void require_output_file(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status)) throw InputError(path, "", "is a directory, expected a file to write");
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        throw InputError(path, "", "is not a regular file (a FIFO, device or socket), expected a file to write");
}

void require_output_folder(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (std::filesystem::exists(status) && !std::filesystem::is_directory(status))
        throw InputError(path, "", "exists and is not a directory, expected an output folder");
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
