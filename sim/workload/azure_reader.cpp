// The Azure LLM inference trace reader (CSV: TIMESTAMP,ContextTokens,GeneratedTokens). The file has
// no hash ids, so block ids come from the seeded prefix-sharing model in sim/workload/sharing.hpp.
#include <charconv>
#include <optional>

#include "sim/io/input_error.hpp"
#include "sim/workload/readers.hpp"

namespace kvcheck::sim {

namespace {

constexpr std::string_view kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens";

// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil), for y >= 1970.
std::uint64_t days_from_civil(std::uint32_t year, std::uint32_t month, std::uint32_t day) {
    const std::uint32_t y = month <= 2 ? year - 1 : year;
    const std::uint32_t era = y / 400;
    const std::uint32_t year_of_era = y - era * 400;
    const std::uint32_t day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
    const std::uint32_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return static_cast<std::uint64_t>(era) * 146097 + day_of_era - 719468;
}

std::uint32_t days_in_month(std::uint32_t year, std::uint32_t month) {
    static constexpr std::uint32_t kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : kDays[month - 1];
}

// Reads exactly `width` digits at `at`, advancing it; nullopt when they are not all digits.
std::optional<std::uint32_t> fixed_digits(std::string_view text, std::size_t& at, std::size_t width) {
    if (at + width > text.size()) return std::nullopt;
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < width; ++i) {
        const char c = text[at + i];
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint32_t>(c - '0');
    }
    at += width;
    return value;
}

bool expect_char(std::string_view text, std::size_t& at, std::string_view allowed) {
    if (at >= text.size() || allowed.find(text[at]) == std::string_view::npos) return false;
    ++at;
    return true;
}

class AzureReader final : public TraceReader {
public:
    AzureReader(const std::string& path, const TraceOptions& options)
        : TraceReader(path, options), sharing_(options.sharing, options.block_tokens, options.seed) {}

protected:
    bool read_record(TraceRecord& out) override {
        while (lines_.next_line()) {
            if (lines_.text().find_first_not_of(" \t") == std::string::npos) continue;
            check_utf8();
            if (!header_seen_) {
                if (lines_.text() != kHeader)
                    throw InputError(path(), place(0),
                                     "expected the CSV header " + std::string(kHeader) + ", got \"" +
                                         shortened(lines_.text()) + "\"");
                header_seen_ = true;
                continue;
            }
            parse_line(out);
            return true;
        }
        return false;
    }

private:
    static std::string shortened(const std::string& text) {
        return text.size() > 60 ? text.substr(0, 57) + "..." : text;
    }

    void parse_line(TraceRecord& out) {
        const std::string& text = lines_.text();
        std::size_t starts[3] = {0, 0, 0};
        std::size_t columns = 1;
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text[i] != ',') continue;
            if (columns < 3) starts[columns] = i + 1;
            ++columns;
        }
        if (columns != 3)
            throw InputError(path(), line_place(),
                             "expected 3 columns (" + std::string(kHeader) + "), got " + std::to_string(columns));
        const std::string_view line(text);
        const std::string_view stamp = line.substr(0, starts[1] - 1);
        const std::string_view context = line.substr(starts[1], starts[2] - 1 - starts[1]);
        const std::string_view generated = line.substr(starts[2]);
        const std::optional<std::uint64_t> absolute_ns = parse_wall_clock_ns(stamp);
        if (!absolute_ns)
            throw InputError(path(), place(0),
                             "expected a TIMESTAMP like 2023-11-16 18:17:03.9799600 (years 1970 to 2500), got \"" +
                                 shortened(std::string(stamp)) + "\"");
        out.input_tokens = unsigned_column(context, starts[1], "ContextTokens", kInputTokensMax);
        if (out.input_tokens == 0)
            throw InputError(path(), place(starts[1]), "expected ContextTokens at least 1, got 0");
        out.output_tokens = unsigned_column(generated, starts[2], "GeneratedTokens", kOutputTokensMax);
        out.block_tokens = options_.block_tokens;
        sharing_.assign(out.input_tokens, out.block_ids);
        out.line = lines_.number();
        out.arrival_ns = relative_arrival(*absolute_ns, [] { return std::size_t{0}; });
    }

    std::uint32_t unsigned_column(std::string_view field, std::size_t start, const char* name,
                                  std::uint32_t max) const {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
        if (field.empty() || ec == std::errc::invalid_argument || end != field.data() + field.size())
            throw InputError(path(), place(start),
                             "expected an unsigned integer for " + std::string(name) + ", got \"" +
                                 shortened(std::string(field)) + "\"");
        if (ec == std::errc::result_out_of_range || value > max)
            throw InputError(path(), place(start),
                             "expected " + std::string(name) + " at most " + std::to_string(max) + ", got " +
                                 shortened(std::string(field)));
        return static_cast<std::uint32_t>(value);
    }

    PrefixSharing sharing_;
    bool header_seen_ = false;
};

}  // namespace

std::optional<std::uint64_t> parse_wall_clock_ns(std::string_view text) {
    std::size_t at = 0;
    const auto year = fixed_digits(text, at, 4);
    if (!year || !expect_char(text, at, "-")) return std::nullopt;
    const auto month = fixed_digits(text, at, 2);
    if (!month || !expect_char(text, at, "-")) return std::nullopt;
    const auto day = fixed_digits(text, at, 2);
    if (!day || !expect_char(text, at, " T")) return std::nullopt;
    const auto hour = fixed_digits(text, at, 2);
    if (!hour || !expect_char(text, at, ":")) return std::nullopt;
    const auto minute = fixed_digits(text, at, 2);
    if (!minute || !expect_char(text, at, ":")) return std::nullopt;
    const auto second = fixed_digits(text, at, 2);
    if (!second) return std::nullopt;
    if (*year < 1970 || *year > 2500 || *month < 1 || *month > 12 || *day < 1 || *day > days_in_month(*year, *month) ||
        *hour > 23 || *minute > 59 || *second > 59)
        return std::nullopt;
    std::uint64_t fraction_ns = 0;
    if (at < text.size()) {
        if (!expect_char(text, at, ".") || at == text.size() || text.size() - at > 9) return std::nullopt;
        std::uint64_t place = 1'000'000'000;
        for (; at < text.size(); ++at) {
            if (text[at] < '0' || text[at] > '9') return std::nullopt;
            place /= 10;
            fraction_ns += static_cast<std::uint64_t>(text[at] - '0') * place;
        }
    }
    const std::uint64_t seconds =
        days_from_civil(*year, *month, *day) * 86'400 + *hour * 3600ULL + *minute * 60ULL + *second;
    return seconds * 1'000'000'000 + fraction_ns;
}

std::unique_ptr<TraceReader> make_azure_reader(const std::string& path, const TraceOptions& options) {
    return std::make_unique<AzureReader>(path, options);
}

}  // namespace kvcheck::sim
