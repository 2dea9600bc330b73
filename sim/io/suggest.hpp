// "Did you mean ...?" for a name that is not one of the known ones: commands, options, policies,
// scopes, invariants, scenario keys. The nearest by edit distance, if near enough to be a typo.
#pragma once

#include <string>
#include <vector>

namespace kvcheck::sim {

// The known name nearest to `word` (optimal string alignment distance, a swap of two neighbours
// counting as one edit, case ignored), when at most a third of its length away (at least one
// edit, at most three); "" when none is that near.
std::string nearest_name(const std::string& word, const std::vector<std::string>& known);

// "; did you mean \"NAME\"?" for that name, or "" when there is none.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& known);

// The names of the model's catalogues, for did_you_mean.
std::vector<std::string> policy_name_list();
std::vector<std::string> preset_name_list();
std::vector<std::string> invariant_name_list();

// "unknown policy \"NAME\"; did you mean ...? (known: ...)" and the same for a preset.
std::string unknown_policy(const std::string& name);
std::string unknown_preset(const std::string& name);

}  // namespace kvcheck::sim
