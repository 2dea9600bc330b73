// A counterexample as a Graphviz DOT path (written with Boost.Graph): one node per state, one
// edge per step, the violating state highlighted.
#pragma once

#include <string>

#include "sim/check/trail.hpp"

namespace kvcheck::sim {

std::string counterexample_dot(const Counterexample& counterexample);

}  // namespace kvcheck::sim
