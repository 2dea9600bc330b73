#include "sim/io/suggest.hpp"

#include <algorithm>
#include <cctype>

#include "model/invariants.hpp"
#include "model/policy.hpp"
#include "model/preset.hpp"

namespace kvcheck::sim {

namespace {

std::size_t distance(const std::string& a, const std::string& b) {
    const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
    const std::size_t n = a.size();
    const std::size_t m = b.size();
    // Three rows: the one before the previous is what a transposition steps back to.
    std::vector<std::size_t> before(m + 1), previous(m + 1), row(m + 1);
    for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
    for (std::size_t i = 1; i <= n; ++i) {
        row[0] = i;
        for (std::size_t j = 1; j <= m; ++j) {
            const bool same = lower(a[i - 1]) == lower(b[j - 1]);
            row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
                row[j] = std::min(row[j], before[j - 2] + 1);
        }
        before.swap(previous);
        previous.swap(row);
    }
    return previous[m];
}

}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& known) {
    if (word.size() > 200) return "";  // no typo is that long, and the table would be large
    const std::size_t allowed = std::clamp<std::size_t>(word.size() / 3, 1, 3);
    std::string best;
    std::size_t best_distance = allowed + 1;
    for (const std::string& name : known) {
        if (name.size() > word.size() + allowed || word.size() > name.size() + allowed) continue;
        const std::size_t d = distance(word, name);
        if (d < best_distance && d > 0) {
            best = name;
            best_distance = d;
        }
    }
    return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
    const std::string name = nearest_name(word, known);
    return name.empty() ? "" : "; did you mean \"" + name + "\"?";
}

std::vector<std::string> policy_name_list() {
    std::vector<std::string> out;
    for (const model::PolicyInfo& p : model::policies()) out.push_back(p.name);
    return out;
}

std::vector<std::string> preset_name_list() {
    std::vector<std::string> out;
    for (const auto& c : model::presets()) out.push_back(c.name);
    return out;
}

std::vector<std::string> invariant_name_list() {
    std::vector<std::string> out;
    for (const auto& i : model::invariant_catalogue()) out.emplace_back(i.name);
    return out;
}

std::string unknown_policy(const std::string& name) {
    return "unknown policy \"" + name + "\"" + did_you_mean(name, policy_name_list()) +
           " (known: " + model::policy_names() + ")";
}

std::string unknown_preset(const std::string& name) {
    std::string names;
    for (const std::string& n : preset_name_list()) names += (names.empty() ? "" : ", ") + n;
    return "unknown preset \"" + name + "\"" + did_you_mean(name, preset_name_list()) + " (known: " + names + ")";
}

}  // namespace kvcheck::sim
