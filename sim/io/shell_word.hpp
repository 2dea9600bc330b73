// Printed command lines (reproduce and continue lines) name user paths and values: each word is
// quoted so that a shell reads it back unchanged.
#pragma once

#include <string>

namespace kvcheck::sim {

// `word` unchanged when the shell would read it back as it is, single-quoted otherwise.
std::string shell_word(const std::string& word);

}  // namespace kvcheck::sim
