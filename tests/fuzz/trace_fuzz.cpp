// libFuzzer target for one trace reader, chosen at build time by KVCHECK_FUZZ_FORMAT (mooncake,
// jsonl or azure): any bytes as a trace file are read to the end under each option set the
// format allows; only InputErrors naming the file may come out, and every record must be
// well-formed (one id per block, arrival times that never go back).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "sim/workload/trace.hpp"
#include "tests/fuzz/fuzz_contract.hpp"

#ifndef KVCHECK_FUZZ_FORMAT
#error "define KVCHECK_FUZZ_FORMAT as mooncake, jsonl or azure"
#endif
#define KVCHECK_FUZZ_STRINGIFY2(x) #x
#define KVCHECK_FUZZ_STRINGIFY(x) KVCHECK_FUZZ_STRINGIFY2(x)

namespace {

using kvcheck::sim::TimeUnit;
using kvcheck::sim::TraceFormat;
using kvcheck::sim::TraceOptions;

constexpr std::uint64_t kRecordsMax = 100'000;  // a bound, so a fuzz input cannot run away

std::vector<TraceOptions> option_sets(TraceFormat format) {
    std::vector<TraceOptions> out;
    TraceOptions base;
    base.format = format;
    switch (format) {
        case TraceFormat::mooncake: out.push_back(base); break;
        case TraceFormat::jsonl:
            for (TimeUnit unit : {TimeUnit::s, TimeUnit::ms, TimeUnit::us, TimeUnit::ns})
                for (std::uint32_t block_tokens : {16u, 512u}) {
                    TraceOptions o = base;
                    o.time_unit = unit;
                    o.block_tokens = block_tokens;
                    out.push_back(o);
                }
            break;
        case TraceFormat::azure:
            for (std::uint64_t seed : {1u, 7u}) {
                TraceOptions o = base;
                o.seed = seed;
                out.push_back(o);
            }
            break;
    }
    return out;
}

void read_all(const std::string& path, const TraceOptions& options) {
    try {
        const std::unique_ptr<kvcheck::sim::TraceReader> reader = kvcheck::sim::TraceReader::open(path, options);
        kvcheck::sim::TraceRecord record;
        std::uint64_t previous_ns = 0;
        for (std::uint64_t n = 0; n < kRecordsMax && reader->next(record); ++n) {
            if (record.arrival_ns < previous_ns) kvcheck::fuzz::contract_broken("a delivered arrival time goes back");
            if (n == 0 && record.arrival_ns != 0)
                kvcheck::fuzz::contract_broken("the first request does not arrive at 0");
            if (record.block_ids.size() != kvcheck::sim::blocks_for(record.input_tokens, record.block_tokens))
                kvcheck::fuzz::contract_broken("a record's block ids do not cover its prompt");
            if (record.input_tokens > kvcheck::sim::kInputTokensMax ||
                record.output_tokens > kvcheck::sim::kOutputTokensMax)
                kvcheck::fuzz::contract_broken("a record exceeds the token bounds");
            previous_ns = record.arrival_ns;
        }
    } catch (const kvcheck::sim::InputError& e) {
        kvcheck::fuzz::check_input_error(e, path);
    } catch (const std::exception& e) {
        kvcheck::fuzz::check_other_error(e, "the reader");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const TraceFormat format = kvcheck::sim::parse_trace_format(KVCHECK_FUZZ_STRINGIFY(KVCHECK_FUZZ_FORMAT));
    static const std::vector<TraceOptions> options = option_sets(format);
    static kvcheck::fuzz::InputFile file(format == TraceFormat::azure ? ".csv" : ".jsonl");
    const std::string& path = file.write(data, size);
    for (const TraceOptions& o : options) read_all(path, o);
    return 0;
}
