// `kvcheck report RUN_DIR [-o FILE]`: renders the report.json of a run folder (or the per-policy
// folders of `kvcheck compare --out`) into one self-contained HTML page, RUN_DIR/report.html by default.
#include <cstdio>
#include <memory>
#include <string>

#include "sim/report/report_html.hpp"
#include "tools/cli/commands.hpp"

namespace kvcheck::cli {

void register_report(CLI::App& app, Common& common) {
    auto run_dir = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand(
        "report", "Render a run folder's report.json (or compare's per-policy folders) as one HTML page");
    cmd->add_option("run_dir", *run_dir, "Folder written by kvcheck run --out or kvcheck compare --out")->required();
    cmd->add_option("-o,--out", *out, "Where to write the page (default RUN_DIR/report.html)");
    cmd->callback([run_dir, out, &common] {
        const std::string path = out->empty() ? *run_dir + "/report.html" : *out;
        sim::write_report_html(*run_dir, path);
        std::printf("wrote %s\n", path.c_str());
        common.exit_code = 0;
    });
}

}  // namespace kvcheck::cli
