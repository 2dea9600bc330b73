// libFuzzer target for the scenario loader: any bytes as a scenario file go through
// validate_scenario (every problem) and load_scenario (the first); both may only report InputErrors
// that name the file (or, for a broken trace reference, the trace). Nothing is run.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "tests/fuzz/fuzz_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static kvcheck::fuzz::InputFile file(".json");
    const std::string& path = file.write(data, size);
    try {
        for (const kvcheck::sim::InputError& e : kvcheck::sim::validate_scenario(path))
            kvcheck::fuzz::check_input_error(e, path);
    } catch (const std::exception& e) {
        kvcheck::fuzz::check_other_error(e, "validate_scenario");
    }
    try {
        const kvcheck::sim::Scenario scenario = kvcheck::sim::load_scenario(path);
        if (scenario.path != path) kvcheck::fuzz::contract_broken("the loaded scenario lost its path");
    } catch (const kvcheck::sim::InputError& e) {
        kvcheck::fuzz::check_input_error(e, path);
    } catch (const std::exception& e) {
        kvcheck::fuzz::check_other_error(e, "load_scenario");
    }
    return 0;
}
