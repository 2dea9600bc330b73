// kvcheck entry point: builds the subcommands, runs the chosen one, maps errors to exit codes.
#include <cstdio>
#include <exception>

#include "sim/input_error.hpp"
#include "tools/cli/commands.hpp"

int main(int argc, char** argv) {
    CLI::App app{"kvcheck: simulator and model checker for hybrid-attention prefix/KV cache managers"};
    app.set_version_flag("--version", std::string("kvcheck ") + KVCHECK_VERSION);
    app.require_subcommand(1);
    kvcheck::cli::Common common;
    kvcheck::cli::register_run(app, common);
    kvcheck::cli::register_compare(app, common);
    kvcheck::cli::register_validate(app, common);
    kvcheck::cli::register_check(app, common);
    kvcheck::cli::register_fuzz(app, common);
    kvcheck::cli::register_merge(app, common);
    kvcheck::cli::register_mutants(app, common);
    kvcheck::cli::register_report(app, common);
    kvcheck::cli::register_presets(app, common);
    kvcheck::cli::register_policies(app, common);
    kvcheck::cli::register_replay(app, common);
    kvcheck::cli::register_trace(app, common);
    kvcheck::cli::register_bench(app, common);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    } catch (const kvcheck::sim::InputError& e) {
        std::fprintf(stderr, "kvcheck: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvcheck: %s\n", e.what());
        return 2;
    }
    return common.exit_code;
}
