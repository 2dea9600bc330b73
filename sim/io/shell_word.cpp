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

}  // namespace kvcheck::sim
