// LOOM_PLUGINS_DISABLE then LOOM_PLUGINS_SELECT: comma-separated globs
// (fnmatch) over plugin names (a glob also matches "<plugin>-<variant>").
// Internal to libloom.
#pragma once

#include <string>
#include <vector>

#include "loom/registry/registry.hpp"

namespace loom::registry {

// A candidate still to be loaded: not yet given a fate with a reason.
inline bool pending(const Candidate& c) { return c.fate == Fate::kFailed && c.reason.empty(); }

// Whether any glob of the comma list matches the name.
bool glob_list_matches(const std::string& globs, const std::string& name);

// Mark candidates still to be loaded as skipped when the environment
// filters them out; the reason names the variable and its value.
void apply_env_filters(std::vector<Candidate>& candidates);

}  // namespace loom::registry
