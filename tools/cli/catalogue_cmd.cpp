// `kvcheck presets` and `kvcheck policies`: the model presets with derived figures, and the
// policies with the defense each removes and the invariant it is expected to break.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "model/policy.hpp"
#include "model/preset.hpp"
#include "sim/io/json_fields.hpp"
#include "tools/cli/commands.hpp"

namespace kvcheck::cli {

namespace {

nlohmann::json preset_json(const model::ModelConfig& config) {
    const model::Derived d = model::derive(config);
    nlohmann::json groups = nlohmann::json::array();
    for (const model::CacheGroup& g : config.groups) {
        nlohmann::json group = sim::cache_group_json(g);
        group["form"] = model::form_name(model::primary_form(g));
        groups.push_back(group);
    }
    nlohmann::json forms = nlohmann::json::array();
    nlohmann::json bytes = nlohmann::json::object();
    for (model::Form f : model::kAllForms) {
        if (!d.form_present[static_cast<int>(f)]) continue;
        forms.push_back(model::form_name(f));
        bytes[std::string(model::form_name(f))] = d.bytes_per_token_by_form[static_cast<int>(f)];
    }
    return {{"name", config.name},
            {"description", config.description},
            {"lcm_tokens", d.lcm_tokens},
            {"forms", forms},
            {"bytes_per_token_by_form", bytes},
            {"groups", groups},
            {"prefill_tokens_per_s", config.prefill_tokens_per_s}};
}

}  // namespace

void register_presets(CLI::App& app, Common& common) {
    auto* cmd = app.add_subcommand(
        "presets", "List model presets with derived figures (LCM boundary, forms, bytes per token per form)");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->callback([json, &common] {
        if (*json) {
            nlohmann::json all = nlohmann::json::array();
            for (const model::ModelConfig& c : model::presets()) all.push_back(preset_json(c));
            std::cout << all.dump(2) << "\n";
            return;
        }
        std::printf("%-14s %6s  %-70s  %s\n", "preset", "lcm", "forms", "bytes/token by form");
        for (const model::ModelConfig& c : model::presets()) {
            const model::Derived d = model::derive(c);
            std::string forms;
            std::string bytes;
            for (model::Form f : model::kAllForms) {
                if (!d.form_present[static_cast<int>(f)]) continue;
                forms += (forms.empty() ? "" : ",") + std::string(model::form_name(f));
                bytes += (bytes.empty() ? "" : " ") + std::string(model::form_name(f)) + "=" +
                         std::to_string(d.bytes_per_token_by_form[static_cast<int>(f)]);
            }
            std::printf("%-14s %6u  %-70s  %s\n", c.name.c_str(), d.lcm_tokens, forms.c_str(), bytes.c_str());
            for (const model::CacheGroup& g : c.groups)
                std::printf(
                    "    %-10s %-8s layers=%-3u block=%-5u segment=%-5u window=%-5u ratio=%-4u bytes/token/layer=%u\n",
                    g.name.c_str(), std::string(model::group_kind_name(g.kind)).c_str(), g.layers, g.block_tokens,
                    g.segment_tokens, g.window_tokens, g.compress_ratio, g.bytes_per_token_layer);
        }
        common.exit_code = 0;
    });
}

void register_policies(CLI::App& app, Common& common) {
    auto* cmd = app.add_subcommand("policies", "List policies: the validated design, the naive rule and the mutants");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "Print JSON: a list of {name, removes, breaks}");
    cmd->callback([json, &common] {
        if (*json) {
            nlohmann::json all = nlohmann::json::array();
            for (const model::PolicyInfo& p : model::policies())
                all.push_back({{"name", p.name}, {"removes", p.removes}, {"breaks", p.breaks}});
            std::cout << all.dump(2) << "\n";
            return;
        }
        std::printf("%-26s %-24s %s\n", "policy", "breaks", "removes");
        for (const model::PolicyInfo& p : model::policies())
            std::printf("%-26s %-24s %s\n", p.name.c_str(), p.breaks.empty() ? "-" : p.breaks.c_str(),
                        p.removes.empty() ? "(every defense in place)" : p.removes.c_str());
        common.exit_code = 0;
    });
}

}  // namespace kvcheck::cli
