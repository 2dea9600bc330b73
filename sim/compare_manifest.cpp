// Writing and reading DIR/compare.json, the manifest of a `kvcheck compare --out DIR`.
#include "sim/compare_manifest.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "sim/files.hpp"
#include "sim/input_error.hpp"
#include "sim/json_fields.hpp"

namespace kvcheck::sim {

std::string compare_manifest_path(const std::string& dir) { return dir + "/compare.json"; }

std::string compare_manifest_text(const CompareManifest& manifest) {
    const nlohmann::json j = {{"scenario", valid_utf8(manifest.scenario)}, {"seed", manifest.seed}, {"policies", manifest.policies}};
    return j.dump(2) + "\n";
}

namespace {

// What a wrong value is called in a message: a number by itself, anything else by its type.
std::string described(const nlohmann::json& value) { return value.is_number() ? value.dump() : json_type_name(value); }

}  // namespace

CompareManifest read_compare_manifest(const std::string& file) {
    const nlohmann::json j = parse_json_text(read_file(file), file);
    if (!j.is_object()) throw InputError(file, "/", "expected an object, got " + json_type_name(j));
    using Test = bool (nlohmann::json::*)() const noexcept;
    const auto member = [&](const std::string& key, Test is_expected, const std::string& expected) -> const nlohmann::json& {
        if (!j.contains(key)) throw InputError(file, "/" + key, "missing from the compare manifest");
        const nlohmann::json& value = j.at(key);
        if (!(value.*is_expected)()) throw InputError(file, "/" + key, "expected " + expected + ", got " + described(value));
        return value;
    };
    CompareManifest m;
    m.scenario = member("scenario", &nlohmann::json::is_string, "a string").get<std::string>();
    m.seed = member("seed", &nlohmann::json::is_number_unsigned, "a whole number of 0 or more").get<std::uint64_t>();
    const nlohmann::json& policies = member("policies", &nlohmann::json::is_array, "an array of policy names");
    if (policies.empty()) throw InputError(file, "/policies", "expected at least one policy");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < policies.size(); ++i) {
        const std::string pointer = "/policies/" + std::to_string(i);
        if (!policies[i].is_string()) throw InputError(file, pointer, "expected a policy name, got " + described(policies[i]));
        const std::string name = policies[i].get<std::string>();
        // Each name is a folder next to the manifest, never a path that leads elsewhere.
        if (name.empty() || name == "." || name == ".." || name.find_first_of(std::string("/\0", 2)) != std::string::npos)
            throw InputError(file, pointer, "\"" + name + "\" is not a folder name");
        if (!seen.insert(name).second) throw InputError(file, pointer, "\"" + name + "\" is listed twice");
        m.policies.push_back(name);
    }
    return m;
}

}  // namespace kvcheck::sim
