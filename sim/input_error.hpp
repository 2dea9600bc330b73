// User input errors: bad scenario JSON, broken trace lines, impossible configs. They carry the file
// and the place (line:column or JSON pointer) and are reported in one line with exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace kvcheck::sim {

class InputError : public std::runtime_error {
public:
    InputError(std::string file, std::string place, std::string message)
        : std::runtime_error(compose(file, place, message)), file_(std::move(file)), place_(std::move(place)),
          message_(std::move(message)) {}

    const std::string& file() const { return file_; }
    const std::string& place() const { return place_; }
    const std::string& message() const { return message_; }

private:
    // One line whatever the input held: control bytes copied from a file name or a bad value are
    // written as \n, \r, \t or \xNN.
    static std::string compose(const std::string& file, const std::string& place, const std::string& message) {
        std::string out = file.empty() ? std::string("<input>") : file;
        if (!place.empty()) out += ":" + place;
        return one_line(out + ": " + message);
    }
    static std::string one_line(const std::string& text) {
        std::string out;
        out.reserve(text.size());
        for (const char c : text) {
            const auto byte = static_cast<unsigned char>(c);
            if (byte >= 0x20 && byte != 0x7f) {
                out += c;
            } else if (c == '\n') {
                out += "\\n";
            } else if (c == '\r') {
                out += "\\r";
            } else if (c == '\t') {
                out += "\\t";
            } else {
                static constexpr char kHex[] = "0123456789ABCDEF";
                out += "\\x";
                out += kHex[byte >> 4];
                out += kHex[byte & 0xF];
            }
        }
        return out;
    }
    std::string file_;
    std::string place_;
    std::string message_;
};

}  // namespace kvcheck::sim
