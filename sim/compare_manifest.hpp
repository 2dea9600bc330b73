// The manifest `kvcheck compare --out DIR` writes as DIR/compare.json: the scenario, the seed and
// the policies in --policies order, so that `kvcheck report DIR` draws its columns in that order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvcheck::sim {

struct CompareManifest {
    std::string scenario;               // the scenario path as given to compare
    std::uint64_t seed = 0;             // the seed every policy ran with
    std::vector<std::string> policies;  // in --policies order; each one's results are in DIR/POLICY/
};

// DIR/compare.json.
std::string compare_manifest_path(const std::string& dir);

// The manifest as JSON text. A scenario path that is not UTF-8 gets U+FFFD, as in report.json.
std::string compare_manifest_text(const CompareManifest& manifest);

// Reads a manifest. Broken JSON, a missing or mistyped key, no policy, a policy that is not a
// plain folder name or one listed twice throws InputError naming the file and the JSON pointer.
// Keys beyond these are allowed, as in report.json.
CompareManifest read_compare_manifest(const std::string& file);

}  // namespace kvcheck::sim
