// The SAX fast path of the JSONL reader (see jsonl_sax.hpp). It only collects values; every
// check on them stays in jsonl_reader.cpp, shared with the DOM path.
#include "sim/workload/jsonl_sax.hpp"

#include <algorithm>

namespace kvcheck::sim::detail {

namespace {

using nlohmann::json;

enum class Field : unsigned { timestamp, input_length, output_length, hash_ids, other };
constexpr unsigned kAllFields = 0b1111;

// A handler for json::sax_parse. Each callback that meets something outside the fast path's
// shape returns false, which stops the parse there; the caller then parses the line again as a DOM.
class FlatLineHandler {
public:
    FlatLineHandler(bool text_timestamps, FlatTraceLine& out) : text_timestamps_(text_timestamps), out_(out) {}

    bool null() { return other_scalar(); }
    bool boolean(bool) { return other_scalar(); }
    bool number_integer(json::number_integer_t) { return other_scalar(); }  // negative: wrong for every field
    bool number_unsigned(json::number_unsigned_t value) {
        if (state_ == State::in_hash_ids) {
            out_.hash_ids.push_back(value);
            return true;
        }
        if (state_ != State::in_object) return false;
        switch (field_) {
            case Field::timestamp: out_.timestamp = value; return true;
            case Field::input_length: out_.input_length = value; return true;
            case Field::output_length: out_.output_length = value; return true;
            case Field::hash_ids: return false;
            case Field::other: return true;
        }
        return false;
    }
    // The value nlohmann hands a float or a string is the one its DOM would hold, so the reader's
    // timestamp conversion sees the same json either way.
    bool number_float(json::number_float_t value, const json::string_t&) {
        if (!timestamp_as_text()) return other_scalar();
        out_.timestamp = value;
        return true;
    }
    bool string(json::string_t& value) {
        if (!timestamp_as_text()) return other_scalar();
        out_.timestamp = value;
        return true;
    }
    bool binary(json::binary_t&) { return false; }  // JSON text has none

    bool start_object(std::size_t) {
        if (state_ != State::before_object) return false;  // nested
        state_ = State::in_object;
        return true;
    }
    // nlohmann hands the key unescaped, as the DOM's std::map would hold it.
    bool key(json::string_t& name) {
        field_ = field_of(name);
        if (field_ == Field::other) {
            // The DOM keeps the last of repeated keys; leave that case to it.
            if (std::find(out_.other_keys.begin(), out_.other_keys.end(), name) != out_.other_keys.end()) return false;
            out_.other_keys.push_back(name);
            return true;
        }
        const unsigned bit = 1u << static_cast<unsigned>(field_);
        if ((seen_ & bit) != 0) return false;
        seen_ |= bit;
        return true;
    }
    bool end_object() {
        state_ = State::done;
        return seen_ == kAllFields;
    }
    bool start_array(std::size_t) {
        if (state_ != State::in_object || field_ != Field::hash_ids) return false;
        state_ = State::in_hash_ids;
        return true;
    }
    bool end_array() {
        state_ = State::in_object;  // start_array lets no other array begin
        return true;
    }
    // Syntax errors and numbers past a double alike: the DOM path reports them.
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

private:
    enum class State { before_object, in_object, in_hash_ids, done };

    static Field field_of(const std::string& name) {
        if (name == "timestamp") return Field::timestamp;
        if (name == "input_length") return Field::input_length;
        if (name == "output_length") return Field::output_length;
        if (name == "hash_ids") return Field::hash_ids;
        return Field::other;
    }

    // A scalar is fine as the value of an unknown key (the DOM path ignores it) and nowhere else.
    bool other_scalar() const { return state_ == State::in_object && field_ == Field::other; }
    bool timestamp_as_text() const {
        return text_timestamps_ && state_ == State::in_object && field_ == Field::timestamp;
    }

    bool text_timestamps_;
    FlatTraceLine& out_;
    State state_ = State::before_object;
    Field field_ = Field::other;
    unsigned seen_ = 0;
};

}  // namespace

bool parse_flat_trace_line(const std::string& text, bool text_timestamps, FlatTraceLine& out) {
    out.hash_ids.clear();
    out.other_keys.clear();
    FlatLineHandler handler(text_timestamps, out);
    // The same lexer and grammar as json::parse(text) in the DOM path: strict (nothing after the
    // value), no comments.
    return json::sax_parse(text, &handler, json::input_format_t::json, true, false);
}

}  // namespace kvcheck::sim::detail
