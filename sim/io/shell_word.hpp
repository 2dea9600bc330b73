// Printed command lines (reproduce and continue lines) name user paths and values: each word is
// quoted so that a shell reads it back unchanged.
#pragma once

#include <string>

namespace kvcheck::sim {

// `word` unchanged when the shell would read it back as it is, single-quoted otherwise.
std::string shell_word(const std::string& word);

// How printed command lines name kvcheck: the path it was started by when that has a slash
// ("./build/kvcheck", quoted as a shell word), else "kvcheck" (found on the PATH, as after
// `cmake --install build`). So a reproduce line pastes into the shell that ran kvcheck.
void set_kvcheck_command(const std::string& argv0);
const std::string& kvcheck_command();

}  // namespace kvcheck::sim
