// docs/scenario.schema.json stays in step with the scenario loader (sim/scenario/scenario.cpp): every
// scenario file validates and loads; the documented examples use every key; an unknown key in any
// object, a number just past either bound and an unknown enum value are refused by both, while the
// bounds and enum values themselves load; and the schema's enums equal the model's catalogues.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/invariants.hpp"
#include "model/policy.hpp"
#include "model/preset.hpp"
#include "model/steps.hpp"
#include "sim/scenario/scenario.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSource = KVCHECK_SOURCE_DIR;

json read_json(const fs::path& path) {
    std::ifstream in(path);
    return json::parse(in);
}

// A validator for the subset of JSON Schema 2020-12 the scenario schema uses. A keyword outside the
// subset is reported as a problem, so the schema cannot grow a rule that goes silently unchecked.
class Validator {
public:
    struct Problem {
        std::string pointer;
        std::string message;
    };
    struct Site {  // an instance location and a schema it was checked against
        std::string pointer;
        const json* schema;
    };
    struct Result {
        std::vector<Problem> problems;
        std::set<std::string> keys_seen;  // "schema location#key" of documented keys present
        std::vector<Site> sites;
    };

    explicit Validator(json schema) : root_(std::move(schema)) {}

    Result validate(const json& doc) const {
        Result r;
        check(doc, root_, "", "", r);
        return r;
    }

    // "schema location#key" of every key of every object schema (those saying additionalProperties).
    std::set<std::string> documented_keys() const {
        std::set<std::string> out;
        collect(root_, "", out);
        return out;
    }

private:
    static void collect(const json& s, const std::string& where, std::set<std::string>& out) {
        if (!s.is_object()) return;
        if (s.contains("additionalProperties") && s.contains("properties"))
            for (const auto& [key, sub] : s["properties"].items()) out.insert(where + "#" + key);
        for (const auto& [key, sub] : s.items())
            if (key == "properties" || key == "$defs")
                for (const auto& [name, inner] : sub.items()) collect(inner, where + "/" + key + "/" + name, out);
    }

    static bool has_type(const json& v, const std::string& type) {
        if (type == "object") return v.is_object();
        if (type == "array") return v.is_array();
        if (type == "string") return v.is_string();
        if (type == "integer") return v.is_number_integer();
        if (type == "number") return v.is_number();
        if (type == "boolean") return v.is_boolean();
        return false;
    }

    // long double holds every 64-bit integer exactly, so 2^56 + 1 stays above 2^56.
    static long double as_long_double(const json& v) {
        if (v.is_number_unsigned()) return static_cast<long double>(v.get<std::uint64_t>());
        if (v.is_number_integer()) return static_cast<long double>(v.get<std::int64_t>());
        return static_cast<long double>(v.get<double>());
    }

    void check(const json& v, const json& s, const std::string& at, const std::string& where, Result& r) const {
        static const std::set<std::string> annotations = {"$schema", "$defs", "title", "description", "default"};
        const auto fail = [&](const std::string& message) { r.problems.push_back({at, message}); };
        r.sites.push_back({at, &s});
        for (const auto& [keyword, arg] : s.items()) {
            if (annotations.count(keyword) > 0) continue;
            if (keyword == "$ref") {
                const std::string target = arg.get<std::string>().substr(1);
                check(v, root_.at(json::json_pointer(target)), at, target, r);
            } else if (keyword == "type") {
                if (!has_type(v, arg.get<std::string>())) fail("expected type " + arg.get<std::string>());
            } else if (keyword == "enum") {
                if (std::find(arg.begin(), arg.end(), v) == arg.end()) fail("not one of the enum values: " + v.dump());
            } else if (keyword == "minimum" || keyword == "maximum") {
                const bool low = keyword == "minimum";
                if (v.is_number() &&
                    (low ? as_long_double(v) < as_long_double(arg) : as_long_double(v) > as_long_double(arg)))
                    fail(v.dump() + " is out of range (" + keyword + " " + arg.dump() + ")");
            } else if (keyword == "minLength") {
                if (v.is_string() && v.get<std::string>().size() < arg.get<std::size_t>()) fail("string too short");
            } else if (keyword == "minProperties") {
                if (v.is_object() && v.size() < arg.get<std::size_t>()) fail("too few keys");
            } else if (keyword == "minItems") {
                if (v.is_array() && v.size() < arg.get<std::size_t>()) fail("too few items");
            } else if (keyword == "required") {
                for (const json& key : arg)
                    if (v.is_object() && !v.contains(key.get<std::string>()))
                        fail("missing required key " + key.dump());
            } else if (keyword == "dependentRequired") {
                for (const auto& [key, needs] : arg.items())
                    for (const json& other : needs)
                        if (v.is_object() && v.contains(key) && !v.contains(other.get<std::string>()))
                            fail(key + " needs " + other.dump());
            } else if (keyword == "dependentSchemas") {
                for (const auto& [key, sub] : arg.items())
                    if (v.is_object() && v.contains(key)) check(v, sub, at, where + "/dependentSchemas/" + key, r);
            } else if (keyword == "not") {
                Result inner;
                check(v, arg, at, where + "/not", inner);
                if (inner.problems.empty())
                    fail("matches a schema it must not match" +
                         (s.contains("description") ? ": " + s["description"].get<std::string>() : ""));
            } else if (keyword == "properties") {
                if (!v.is_object()) continue;
                for (const auto& [key, sub] : arg.items()) {
                    if (!v.contains(key)) continue;
                    if (s.contains("additionalProperties")) r.keys_seen.insert(where + "#" + key);
                    check(v[key], sub, at + "/" + key, where + "/properties/" + key, r);
                }
            } else if (keyword == "patternProperties") {
                if (!v.is_object()) continue;
                for (const auto& [pattern, sub] : arg.items())
                    for (const auto& [key, item] : v.items())
                        if (std::regex_search(key, std::regex(pattern)))
                            check(item, sub, at + "/" + key, where + "/patternProperties/" + pattern, r);
            } else if (keyword == "additionalProperties") {
                if (!v.is_object()) continue;
                const auto patterned = [&](const std::string& key) {
                    if (!s.contains("patternProperties")) return false;
                    for (const auto& [pattern, sub] : s["patternProperties"].items())
                        if (std::regex_search(key, std::regex(pattern))) return true;
                    return false;
                };
                for (const auto& [key, item] : v.items()) {
                    if (s.contains("properties") && s["properties"].contains(key)) continue;
                    if (patterned(key)) continue;
                    if (arg.is_boolean()) {
                        if (!arg.get<bool>()) r.problems.push_back({at + "/" + key, "unknown key"});
                    } else {
                        check(item, arg, at + "/" + key, where + "/additionalProperties", r);
                    }
                }
            } else if (keyword == "propertyNames") {
                if (!v.is_object()) continue;
                for (const auto& [key, item] : v.items())
                    check(json(key), arg, at + "/" + key, where + "/propertyNames", r);
            } else if (keyword == "items") {
                if (!v.is_array()) continue;
                for (std::size_t i = 0; i < v.size(); ++i)
                    check(v[i], arg, at + "/" + std::to_string(i), where + "/items", r);
            } else if (keyword == "oneOf" || keyword == "anyOf") {
                std::vector<Result> passed;
                std::vector<Problem> branch_problems;  // when none matches, each branch's reasons are reported too
                for (std::size_t i = 0; i < arg.size(); ++i) {
                    Result branch;
                    check(v, arg[i], at, where + "/" + keyword + "/" + std::to_string(i), branch);
                    if (branch.problems.empty())
                        passed.push_back(std::move(branch));
                    else
                        branch_problems.insert(branch_problems.end(), branch.problems.begin(), branch.problems.end());
                }
                if (keyword == "oneOf" ? passed.size() != 1 : passed.empty()) {
                    fail(keyword + ": " + std::to_string(passed.size()) + " branches match");
                    if (passed.empty())
                        r.problems.insert(r.problems.end(), branch_problems.begin(), branch_problems.end());
                    continue;
                }
                for (Result& branch : passed) {  // what the matching branches saw counts as seen
                    r.keys_seen.insert(branch.keys_seen.begin(), branch.keys_seen.end());
                    r.sites.insert(r.sites.end(), branch.sites.begin(), branch.sites.end());
                }
            } else {
                fail("schema keyword " + keyword + " is not supported by this validator");
            }
        }
    }

    json root_;
};

const Validator& validator() {
    static const Validator v(read_json(kSource / "docs/scenario.schema.json"));
    return v;
}

std::vector<fs::path> scenario_files() {
    std::vector<fs::path> out;
    for (const char* folder : {"scenarios", "docs/examples"})
        for (const auto& entry : fs::recursive_directory_iterator(kSource / folder))
            if (entry.is_regular_file() && entry.path().extension() == ".json") out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
}

const std::vector<fs::path>& examples() {
    static const std::vector<fs::path> files = {kSource / "docs/examples/scenario-full.json",
                                                kSource / "docs/examples/scenario-steps.json",
                                                kSource / "docs/examples/scenario-gib.json"};
    return files;
}

bool has_problem_at(const std::vector<Validator::Problem>& problems, const std::string& pointer) {
    return std::any_of(problems.begin(), problems.end(), [&](const auto& p) { return p.pointer == pointer; });
}

// Loads a changed copy of a scenario, written next to nothing (its trace path made absolute),
// and returns the JSON pointers of the loader's problems.
class Scratch {
public:
    Scratch() {
        std::string pattern = (fs::temp_directory_path() / "kvcheck-schema-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        dir_ = pattern;
    }
    ~Scratch() { fs::remove_all(dir_); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

    std::string write(json doc, const fs::path& origin) {
        if (doc.contains("workload") && doc["workload"].is_object() && doc["workload"].contains("trace"))
            doc["workload"]["trace"] =
                (origin.parent_path() / doc["workload"]["trace"].get<std::string>()).lexically_normal().string();
        const std::string path = (dir_ / "case.json").string();
        std::ofstream(path) << doc.dump(2);
        return path;
    }
    std::vector<std::string> loader_problems(const json& doc, const fs::path& origin) {
        std::vector<std::string> places;
        for (const kvcheck::sim::InputError& e : kvcheck::sim::validate_scenario(write(doc, origin)))
            places.push_back(e.place());
        return places;
    }
    fs::path dir() const { return dir_; }

private:
    fs::path dir_;
};

bool contains(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

// Every scenario in the repository and every documented example is valid for both the schema and the loader.
TEST(Schema, EveryScenarioValidatesAndLoads) {
    const std::vector<fs::path> files = scenario_files();
    ASSERT_GE(files.size(), 3u);
    for (const fs::path& file : files) {
        for (const auto& p : validator().validate(read_json(file)).problems)
            ADD_FAILURE() << file << " " << p.pointer << ": " << p.message;
        for (const auto& e : kvcheck::sim::validate_scenario(file.string())) ADD_FAILURE() << e.what();
    }
}

// The examples together use every key the schema documents, so every documented key loads.
TEST(Schema, ExamplesUseEveryDocumentedKey) {
    std::set<std::string> seen;
    for (const fs::path& file : examples()) {
        const Validator::Result r = validator().validate(read_json(file));
        EXPECT_TRUE(r.problems.empty()) << file;
        seen.insert(r.keys_seen.begin(), r.keys_seen.end());
    }
    for (const std::string& key : validator().documented_keys())
        EXPECT_EQ(seen.count(key), 1u) << "no example uses " << key;
}

// An unknown key in any object is refused by the schema and makes `kvcheck validate` exit 2 naming it.
TEST(Schema, UnknownKeysAreRefusedInEveryObject) {
    Scratch scratch;
    std::size_t objects = 0;
    for (const fs::path& file : examples()) {
        const json original = read_json(file);
        std::set<std::string> pointers;
        for (const auto& site : validator().validate(original).sites)
            if (site.schema->contains("additionalProperties") &&
                original.at(json::json_pointer(site.pointer)).is_object())
                pointers.insert(site.pointer);
        for (const std::string& at : pointers) {
            json doc = original;
            doc[json::json_pointer(at)]["zz_unknown_key"] = 1;
            EXPECT_FALSE(validator().validate(doc).problems.empty()) << at;
            const std::string path = scratch.write(doc, file);
            const std::string err = (scratch.dir() / "stderr.txt").string();
            const int status =
                std::system((std::string(KVCHECK_BINARY) + " validate " + path + " >/dev/null 2>" + err).c_str());
            EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << at;
            std::stringstream text;
            text << std::ifstream(err).rdbuf();
            EXPECT_NE(text.str().find(at + "/zz_unknown_key"), std::string::npos) << text.str();
            ++objects;
        }
    }
    EXPECT_GE(objects, 20u);
}

// A steps-mode scenario with a section of a workload run (storage, compute, faults, limits, taken
// from the full example) is refused by both the schema and the loader, at that section.
TEST(Schema, StepsModeRefusesTheSectionsOfAWorkloadRun) {
    Scratch scratch;
    const fs::path steps_file = fs::path(KVCHECK_SOURCE_DIR) / "scenarios" / "regress" / "pin-epoch-no-pin.json";
    const json full = read_json(fs::path(KVCHECK_SOURCE_DIR) / "docs" / "examples" / "scenario-full.json");
    for (const char* section : {"storage", "compute", "faults", "limits"}) {
        ASSERT_TRUE(full.contains(section)) << section;
        json doc = read_json(steps_file);
        EXPECT_TRUE(validator().validate(doc).problems.empty());
        doc[section] = full[section];
        EXPECT_FALSE(validator().validate(doc).problems.empty()) << section;
        EXPECT_TRUE(contains(scratch.loader_problems(doc, steps_file), std::string("/") + section)) << section;
    }
}

// Every bounded number loads at its bounds and is refused by both just past them; integers refuse fractions.
TEST(Schema, BoundsMatchTheLoader) {
    Scratch scratch;
    std::size_t checked = 0;
    for (const fs::path& file : examples()) {
        const json original = read_json(file);
        std::set<std::string> done;
        for (const auto& site : validator().validate(original).sites) {
            const json& s = *site.schema;
            if (!s.contains("minimum") || !original.at(json::json_pointer(site.pointer)).is_number() ||
                !done.insert(site.pointer).second)
                continue;
            const bool integer = s.value("type", "") == "integer";
            const auto with = [&](const json& value) {
                json doc = original;
                doc[json::json_pointer(site.pointer)] = value;
                return doc;
            };
            const auto accepted = [&](const json& value) {
                const json doc = with(value);
                EXPECT_FALSE(has_problem_at(validator().validate(doc).problems, site.pointer))
                    << site.pointer << " = " << value;
                EXPECT_FALSE(contains(scratch.loader_problems(doc, file), site.pointer))
                    << site.pointer << " = " << value << " (loader)";
            };
            const auto refused = [&](const json& value) {
                const json doc = with(value);
                EXPECT_TRUE(has_problem_at(validator().validate(doc).problems, site.pointer))
                    << site.pointer << " = " << value;
                EXPECT_TRUE(contains(scratch.loader_problems(doc, file), site.pointer))
                    << site.pointer << " = " << value << " (loader)";
            };
            const json& low = s["minimum"];
            accepted(low);
            if (integer)
                refused(low.get<std::int64_t>() - 1);
            else
                refused(low.get<double>() > 0 ? low.get<double>() / 2
                                              : low.get<double>() - std::max(1.0, std::abs(low.get<double>()) * 1e-9));
            if (s.contains("maximum")) {
                const json& high = s["maximum"];
                accepted(high);
                if (integer)
                    refused(high.get<std::uint64_t>() + 1);
                else
                    refused(high.get<double>() + std::max(1.0, std::abs(high.get<double>()) * 1e-9));
            }
            if (integer) refused(low.get<double>() + 0.5);
            ++checked;
        }
    }
    EXPECT_GE(checked, 40u);
}

// Every enum value loads where the schema allows it; an unknown value is refused by both.
TEST(Schema, EnumsMatchTheLoader) {
    Scratch scratch;
    std::size_t checked = 0;
    for (const fs::path& file : examples()) {
        const json original = read_json(file);
        std::set<std::string> done;
        for (const auto& site : validator().validate(original).sites) {
            const json& s = *site.schema;
            if (!s.contains("enum") || !original.at(json::json_pointer(site.pointer)).is_string() ||
                !done.insert(site.pointer).second)
                continue;
            for (const json& value : s["enum"]) {
                json doc = original;
                doc[json::json_pointer(site.pointer)] = value;
                EXPECT_FALSE(contains(scratch.loader_problems(doc, file), site.pointer))
                    << site.pointer << " = " << value;
            }
            json doc = original;
            doc[json::json_pointer(site.pointer)] = "zz-not-a-value";
            EXPECT_TRUE(has_problem_at(validator().validate(doc).problems, site.pointer)) << site.pointer;
            EXPECT_TRUE(contains(scratch.loader_problems(doc, file), site.pointer)) << site.pointer << " (loader)";
            ++checked;
        }
    }
    EXPECT_GE(checked, 8u);
}

// The schema's enums list exactly the policies, presets, invariants, faults, steps and group kinds the model knows.
TEST(Schema, EnumsEqualTheModelCatalogues) {
    const json schema = read_json(kSource / "docs/scenario.schema.json");
    const auto names = [](const json& list) { return list.get<std::set<std::string>>(); };
    std::set<std::string> policies, presets, invariants, faults, steps;
    for (const auto& p : kvcheck::model::policies()) policies.insert(p.name);
    for (const auto& p : kvcheck::model::presets()) presets.insert(p.name);
    for (const auto& i : kvcheck::model::invariant_catalogue()) invariants.insert(std::string(i.name));
    for (int f = 0; f < kvcheck::model::kFaultClassCount; ++f)
        faults.insert(std::string(kvcheck::model::fault_name(static_cast<kvcheck::model::FaultClass>(f))));
    for (int k = 0; k < kvcheck::model::kStepKindCount; ++k)
        steps.insert(std::string(kvcheck::model::step_kind_name(static_cast<kvcheck::model::StepKind>(k))));
    EXPECT_EQ(names(schema["$defs"]["policy"]["enum"]), policies);
    std::set<std::string> expect_keys = policies;
    expect_keys.insert("*");
    EXPECT_EQ(names(schema["properties"]["expect"]["propertyNames"]["enum"]), expect_keys);
    EXPECT_EQ(names(schema["$defs"]["preset"]["enum"]), presets);
    EXPECT_EQ(names(schema["$defs"]["invariant"]["enum"]), invariants);
    EXPECT_EQ(names(schema["$defs"]["fault"]["properties"]["fault"]["enum"]), faults);
    EXPECT_EQ(names(schema["$defs"]["step"]["properties"]["step"]["enum"]), steps);
    for (const json& kind : schema["$defs"]["group"]["properties"]["kind"]["enum"]) {
        const auto parsed = kvcheck::model::group_kind_from_name(kind.get<std::string>());
        ASSERT_TRUE(parsed.has_value()) << kind;
        EXPECT_EQ(kvcheck::model::group_kind_name(*parsed), kind.get<std::string>());
    }
}

// Every key name the loader reads (scanned from sim/scenario/scenario.cpp) is a documented key of the schema.
TEST(Schema, EveryKeyTheLoaderReadsIsDocumented) {
    std::stringstream source;
    source << std::ifstream(kSource / "sim/scenario/scenario.cpp").rdbuf();
    const std::string text = source.str();
    std::set<std::string> documented;
    for (const std::string& key : validator().documented_keys()) documented.insert(key.substr(key.find('#') + 1));
    const std::regex read(
        R"(\b(?:text|choice|number|unsigned_number|optional_number|optional_unsigned|flag|unsigned_list|raw)\("([A-Za-z_]+)\"|key == "([a-z_]+)\")");
    std::size_t found = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), read); it != std::sregex_iterator(); ++it) {
        const std::string key = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
        EXPECT_EQ(documented.count(key), 1u)
            << "the loader reads \"" << key << "\" but docs/scenario.schema.json does not document it";
        ++found;
    }
    EXPECT_GE(found, 60u);
}
