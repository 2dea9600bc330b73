#include "sim/io/shell_word.hpp"

namespace kvcheck::sim {

std::string shell_word(const std::string& word) {
    const bool plain =
        !word.empty() &&
        word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") ==
            std::string::npos;
    if (plain) return word;
    std::string quoted = "'";
    for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

namespace {

std::string& command_name() {
    static std::string name = "kvcheck";
    return name;
}

}  // namespace

void set_kvcheck_command(const std::string& argv0) {
    command_name() = argv0.find('/') == std::string::npos ? "kvcheck" : shell_word(argv0);
}

const std::string& kvcheck_command() { return command_name(); }

}  // namespace kvcheck::sim
