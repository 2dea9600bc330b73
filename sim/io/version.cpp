#include "sim/io/version.hpp"

#include <kvcheck_commit.hpp>  // generated in the build folder (tools/commit-header.cmake), not a source

namespace kvcheck::sim {

std::string kvcheck_version() { return KVCHECK_VERSION; }
std::string kvcheck_commit() { return KVCHECK_COMMIT; }
std::string kvcheck_version_line() { return "kvcheck " + kvcheck_version() + " (commit " + kvcheck_commit() + ")"; }

}  // namespace kvcheck::sim
