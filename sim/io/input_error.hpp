// User input errors: bad scenario JSON, broken trace lines, impossible configs. They carry the file
// and the place (line:column or JSON pointer) and are reported in one line with exit code 2.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kvcheck::sim {

// The length of the valid UTF-8 sequence that starts at text[i] (a byte of 0x80 or more), or 0
// when there is none; then *bad is the offset of the first byte that breaks it.
inline std::size_t utf8_sequence(std::string_view text, std::size_t i, std::size_t* bad) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    unsigned char low = 0x80;  // bounds on the second byte rule out overlong forms and surrogates
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;
        if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;
    }
    *bad = i;
    if (length == 0 || i + length > text.size()) return 0;
    for (std::size_t k = 1; k < length; ++k) {
        const auto byte = static_cast<unsigned char>(text[i + k]);
        *bad = i + k;
        if (byte < (k == 1 ? low : 0x80) || byte > (k == 1 ? high : 0xBF)) return 0;
    }
    return length;
}

// `text` with every byte that is not part of valid UTF-8 replaced by U+FFFD: for names taken from
// file names that go into outputs that must be UTF-8 (report.json, JUnit XML).
inline std::string valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        std::size_t bad = 0;
        const std::size_t length = static_cast<unsigned char>(text[i]) < 0x80 ? 1 : utf8_sequence(text, i, &bad);
        if (length == 0) {
            out += "\xEF\xBF\xBD";
            continue;
        }
        out.append(text.data() + i, length);
        i += length - 1;
    }
    return out;
}

// nlohmann takes a NUL byte for the end of the input, so text holding one after a whole value
// would parse as that value alone: the scenario loader and the JSONL reader refuse any NUL with this.
inline constexpr const char* kNulInJson = "invalid JSON: a NUL byte (0x00); expected JSON text";

class InputError : public std::runtime_error {
public:
    InputError(std::string file, std::string place, std::string message)
        : std::runtime_error(compose(file, place, message)), file_(std::move(file)), place_(std::move(place)),
          message_(std::move(message)) {}

    const std::string& file() const { return file_; }
    const std::string& place() const { return place_; }
    const std::string& message() const { return message_; }

private:
    // One line of UTF-8 text whatever the input held: control bytes and bytes that are not UTF-8,
    // copied from a file name or a bad value, are written as \n, \r, \t or \xNN.
    // A place or message that quotes a huge user value (a 1 MB key in a JSON pointer, a long
    // string) is cut in its middle, so the line stays readable and keeps its start and its end.
    static std::string compose(const std::string& file, const std::string& place, const std::string& message) {
        std::string out = file.empty() ? std::string("<input>") : file;
        if (!place.empty()) {
            out.push_back(':');
            append_capped(out, place, kPlaceMax);
        }
        out.append(": ");
        append_capped(out, message, kMessageMax);
        return one_line(out);
    }
    static constexpr std::size_t kPlaceMax = 240;
    static constexpr std::size_t kMessageMax = 720;
    static void append_capped(std::string& out, std::string_view text, std::size_t max) {
        if (text.size() <= max) {
            out.append(text);
            return;
        }
        const std::size_t head = max * 2 / 3;
        const std::size_t tail = max / 4;
        out.append(text.substr(0, head));
        out.append("...(");
        out.append(std::to_string(text.size() - head - tail));
        out.append(" bytes cut)...");
        out.append(text.substr(text.size() - tail));
    }
    static std::string one_line(const std::string& text) {
        std::string out;
        out.reserve(text.size());
        for (std::size_t i = 0; i < text.size(); ++i) {
            const char c = text[i];
            const auto byte = static_cast<unsigned char>(c);
            std::size_t bad = 0;
            const std::size_t length = byte >= 0x80 ? utf8_sequence(text, i, &bad) : 0;
            if (length > 0) {
                out.append(text.data() + i, length);
                i += length - 1;
            } else if (byte >= 0x20 && byte < 0x7f) {
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
