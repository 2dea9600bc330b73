// libFuzzer target for `kvcheck report`: any bytes as the report.json of a run folder go through
// load_run_reports (the shape and every figure checked) and report_html (the page drawn from
// them). Bad input may only come out as an InputError that names that report.json.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sim/report/report_html.hpp"
#include "tests/fuzz/fuzz_contract.hpp"

namespace {

// A run folder holding only report.json, rewritten for each input and removed at exit.
class RunFolder {
public:
    RunFolder() : dir_(kvcheck::fuzz::input_folder() / ("kvcheck-fuzz-" + std::to_string(::getpid()) + "-run")) {
        std::filesystem::create_directories(dir_);
        file_ = std::make_unique<kvcheck::fuzz::InputFile>(std::string());
    }
    ~RunFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    RunFolder(const RunFolder&) = delete;
    RunFolder& operator=(const RunFolder&) = delete;

    // Writes the input and moves it into the folder as report.json; returns that file's name.
    std::string write(const std::uint8_t* data, std::size_t size) {
        const std::string report = (dir_ / "report.json").string();
        std::filesystem::rename(file_->write(data, size), report);
        return report;
    }
    std::string dir() const { return dir_.string(); }

private:
    std::filesystem::path dir_;
    std::unique_ptr<kvcheck::fuzz::InputFile> file_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static RunFolder folder;
    const std::string report = folder.write(data, size);
    try {
        const std::vector<kvcheck::sim::NamedReport> reports = kvcheck::sim::load_run_reports(folder.dir());
        if (reports.size() != 1 || reports.front().file != report)
            kvcheck::fuzz::contract_broken("the run folder did not load as its one report");
        if (kvcheck::sim::report_html(reports).find("</html>") == std::string::npos)
            kvcheck::fuzz::contract_broken("the page is not whole");
    } catch (const kvcheck::sim::InputError& e) {
        kvcheck::fuzz::check_input_error(e, report);
    } catch (const std::exception& e) {
        kvcheck::fuzz::check_other_error(e, "load_run_reports or report_html");
    }
    return 0;
}
