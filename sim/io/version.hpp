// kvcheck's version and the commit it was built from, for --version, reports and metrics.
#pragma once

#include <string>

namespace kvcheck::sim {

std::string kvcheck_version();       // "0.1.0"
std::string kvcheck_commit();        // "3732f63e1a2b", "…-dirty" for edited sources, "unknown" outside git
std::string kvcheck_version_line();  // "kvcheck 0.1.0 (commit 3732f63e1a2b)"

}  // namespace kvcheck::sim
