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
    static std::string compose(const std::string& file, const std::string& place, const std::string& message) {
        std::string out = file.empty() ? std::string("<input>") : file;
        if (!place.empty()) out += ":" + place;
        return out + ": " + message;
    }
    std::string file_;
    std::string place_;
    std::string message_;
};

}  // namespace kvcheck::sim
