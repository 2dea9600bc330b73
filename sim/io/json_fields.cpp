// Typed JSON field access with JSON-pointer problem reports.
#include "sim/io/json_fields.hpp"

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "sim/io/suggest.hpp"

namespace kvcheck::sim {

std::string pointer_escape(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

std::string json_type_name(const nlohmann::json& value) {
    if (value.is_null()) return "null";
    if (value.is_boolean()) return "a boolean";
    if (value.is_number_integer()) return "an integer";
    if (value.is_number()) return "a number";
    if (value.is_string()) return "a string";
    if (value.is_array()) return "an array";
    return "an object";
}

Fields::Fields(const nlohmann::json& value, std::string pointer, Problems& problems)
    : pointer_(std::move(pointer)), problems_(problems) {
    if (value.is_object())
        object_ = &value;
    else
        problems_.add(pointer_.empty() ? "/" : pointer_, "expected an object, got " + json_type_name(value));
}

bool Fields::has(const std::string& key) const { return object_ != nullptr && object_->contains(key); }

const nlohmann::json* Fields::raw(const std::string& key) {
    known_.insert(key);
    if (!has(key)) return nullptr;
    return &(*object_)[key];
}

std::optional<std::uint64_t> Fields::optional_unsigned(const std::string& key, std::uint64_t min, std::uint64_t max) {
    const nlohmann::json* v = raw(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer() && !v->is_number_unsigned()) {
        problems_.add(at(key), "expected an unsigned integer, got " + json_type_name(*v));
        return std::nullopt;
    }
    if (v->is_number_integer() && !v->is_number_unsigned() && v->get<std::int64_t>() < 0) {
        problems_.add(at(key), "expected an unsigned integer, got the negative " + brief(*v));
        return std::nullopt;
    }
    const auto x = v->get<std::uint64_t>();
    if (x < min || x > max) {
        problems_.add(at(key), "expected a value in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                                   v->dump());
        return std::nullopt;
    }
    return x;
}

std::uint64_t Fields::unsigned_number(const std::string& key, std::uint64_t fallback, std::uint64_t min,
                                      std::uint64_t max) {
    return optional_unsigned(key, min, max).value_or(fallback);
}

std::optional<double> Fields::optional_number(const std::string& key, double min, double max) {
    const nlohmann::json* v = raw(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) {
        problems_.add(at(key), "expected a number, got " + json_type_name(*v));
        return std::nullopt;
    }
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < min || x > max) {
        problems_.add(at(key), "expected a number in [" + nlohmann::json(min).dump() + ", " +
                                   nlohmann::json(max).dump() + "], got " + brief(*v));
        return std::nullopt;
    }
    return x;
}

double Fields::number(const std::string& key, double fallback, double min, double max) {
    return optional_number(key, min, max).value_or(fallback);
}

std::string Fields::text(const std::string& key, const std::string& fallback) {
    const nlohmann::json* v = raw(key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) {
        problems_.add(at(key), "expected a string, got " + json_type_name(*v));
        return fallback;
    }
    return v->get<std::string>();
}

std::string Fields::choice(const std::string& key, const std::string& fallback,
                           const std::vector<std::string>& allowed) {
    const nlohmann::json* v = raw(key);
    if (v == nullptr) return fallback;
    std::string names;
    for (const std::string& a : allowed) names += (names.empty() ? "" : ", ") + a;
    if (!v->is_string()) {
        problems_.add(at(key), "expected one of " + names + ", got " + json_type_name(*v));
        return fallback;
    }
    auto s = v->get<std::string>();
    for (const std::string& a : allowed)
        if (a == s) return s;
    problems_.add(at(key), "expected one of " + names + ", got \"" + s + "\"" + did_you_mean(s, allowed));
    return fallback;
}

bool Fields::flag(const std::string& key, bool fallback) {
    const nlohmann::json* v = raw(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) {
        problems_.add(at(key), "expected true or false, got " + json_type_name(*v));
        return fallback;
    }
    return v->get<bool>();
}

std::vector<std::uint64_t> Fields::unsigned_list(const std::string& key, std::uint64_t max) {
    std::vector<std::uint64_t> out;
    const nlohmann::json* v = raw(key);
    if (v == nullptr) return out;
    if (!v->is_array()) {
        problems_.add(at(key), "expected an array of unsigned integers, got " + json_type_name(*v));
        return out;
    }
    for (std::size_t i = 0; i < v->size(); ++i) {
        const nlohmann::json& e = (*v)[i];
        if (!e.is_number_unsigned() && !(e.is_number_integer() && e.get<std::int64_t>() >= 0)) {
            problems_.add(at(key) + "/" + std::to_string(i), "expected an unsigned integer, got " + json_type_name(e));
            continue;
        }
        if (e.get<std::uint64_t>() > max) {
            problems_.add(at(key) + "/" + std::to_string(i), "value " + brief(e) + " exceeds " + std::to_string(max));
            continue;
        }
        out.push_back(e.get<std::uint64_t>());
    }
    return out;
}

void Fields::finish() {
    if (object_ == nullptr) return;
    for (const auto& [key, value] : object_->items())
        if (known_.count(key) == 0)
            problems_.add(at(key), "unknown key \"" + key + "\"" +
                                       did_you_mean(key, std::vector<std::string>(known_.begin(), known_.end())));
}

nlohmann::json cache_group_json(const model::CacheGroup& g) {
    nlohmann::json out = {{"name", g.name},
                          {"kind", model::group_kind_name(g.kind)},
                          {"layers", g.layers},
                          {"block_tokens", g.block_tokens},
                          {"segment_tokens", g.segment_tokens},
                          {"window_tokens", g.window_tokens},
                          {"compress_ratio", g.compress_ratio},
                          {"bytes_per_token_layer", g.bytes_per_token_layer},
                          {"state_bytes_layer", g.state_bytes_layer},
                          {"indexer_top_k", g.indexer_top_k},
                          {"layout_id", g.layout_id}};
    if (g.kind == model::GroupKind::indexer) out["indexed_group"] = g.indexed_group;
    return out;
}

std::string line_column(const std::string& text, std::size_t byte) {
    std::size_t line = 1;
    std::size_t column = 1;
    const std::size_t end = std::min(byte, text.size());
    for (std::size_t i = 0; i < end; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return std::to_string(line) + ":" + std::to_string(column);
}

namespace {

// Calls visit(i) at every byte of text outside string literals; visit returns false to stop.
template <typename Visit>
void outside_strings(std::string_view text, Visit visit) {
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (!visit(i)) {
            return;
        }
    }
}

bool number_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

}  // namespace

std::size_t overflow_token_start(const std::string& text, const nlohmann::json::out_of_range& error) {
    const std::string what = error.what();
    const std::size_t open = what.find('\'');
    const std::size_t close = open == std::string::npos ? std::string::npos : what.find('\'', open + 1);
    if (close == std::string::npos) return std::string::npos;
    const std::string literal = what.substr(open + 1, close - open - 1);
    if (literal.empty()) return std::string::npos;
    std::size_t found = std::string::npos;
    outside_strings(text, [&](std::size_t i) {
        if (text.compare(i, literal.size(), literal) != 0 || (i > 0 && number_char(text[i - 1])) ||
            (i + literal.size() < text.size() && number_char(text[i + literal.size()])))
            return true;
        found = i;
        return false;
    });
    return found;
}

std::size_t too_deep_at(std::string_view text) {
    std::size_t depth = 0;
    std::size_t found = std::string::npos;
    outside_strings(text, [&](std::size_t i) {
        const char c = text[i];
        if (c == '[' || c == '{') {
            if (++depth > kJsonDepthMax) {
                found = i;
                return false;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
        return true;
    });
    return found;
}

std::string brief(const nlohmann::json& value) {
    std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return text;
}

bool DuplicateKeys::operator()(int /*depth*/, nlohmann::json::parse_event_t event, const nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
        case Event::object_start: frames_.push_back({true, {}, {}, 0}); break;
        case Event::array_start: frames_.push_back({false, {}, {}, 0}); break;
        case Event::key: {
            Frame& top = frames_.back();
            top.key = parsed.get<std::string>();
            if (!top.keys.insert(top.key).second && duplicate_.empty()) duplicate_ = pointer();
            break;
        }
        case Event::object_end:
        case Event::array_end:
            frames_.pop_back();
            next_element();
            break;
        case Event::value: next_element(); break;
    }
    return true;
}

void DuplicateKeys::next_element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
}

std::string DuplicateKeys::pointer() const {
    std::string out;
    for (const Frame& f : frames_) {
        out += '/';
        out += f.object ? pointer_escape(f.key) : std::to_string(f.index);
    }
    return out;
}

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
    if (const std::size_t nul = text.find('\0'); nul != std::string::npos)
        throw InputError(file, line_column(text, nul), kNulInJson);
    if (const std::size_t deep = too_deep_at(text); deep != std::string::npos)
        throw InputError(file, line_column(text, deep), kTooDeep);
    try {
        DuplicateKeys duplicates;
        nlohmann::json value = nlohmann::json::parse(text, std::ref(duplicates));
        if (!duplicates.duplicate().empty())
            throw InputError(file, duplicates.duplicate(), "duplicate key; each key may appear once in an object");
        return value;
    } catch (const nlohmann::json::parse_error& e) {
        std::string what = e.what();
        const std::size_t cut = what.find(": ");
        if (cut != std::string::npos) what = what.substr(cut + 2);
        throw InputError(file, line_column(text, e.byte == 0 ? 0 : e.byte - 1), "invalid JSON: " + what);
    } catch (const nlohmann::json::out_of_range& e) {
        // A number literal too large for a double ("1e999"): nlohmann gives no position, only the literal.
        const std::size_t at = overflow_token_start(text, e);
        throw InputError(file, at == std::string::npos ? std::string() : line_column(text, at),
                         "number out of range; expected a finite number");
    }
}

}  // namespace kvcheck::sim
