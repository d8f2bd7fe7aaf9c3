#include "registry/filters.hpp"

#include <fnmatch.h>

#include <cstdlib>

#include "loom/runtime/log.hpp"

namespace loom::registry {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return std::string();
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

bool glob_list_matches(const std::string& globs, const std::string& name) {
  size_t pos = 0;
  while (pos <= globs.size()) {
    size_t comma = globs.find(',', pos);
    if (comma == std::string::npos) comma = globs.size();
    std::string glob = trim(globs.substr(pos, comma - pos));
    if (!glob.empty() && fnmatch(glob.c_str(), name.c_str(), 0) == 0) return true;
    pos = comma + 1;
  }
  return false;
}

void apply_env_filters(std::vector<Candidate>& candidates) {
  const char* disable = std::getenv("LOOM_PLUGINS_DISABLE");
  const char* select = std::getenv("LOOM_PLUGINS_SELECT");
  std::string dis = disable ? disable : "", sel = select ? select : "";
  if (trim(dis).empty() && trim(sel).empty()) return;
  for (auto& c : candidates) {
    if (!pending(c)) continue;
    std::string label = c.variant.empty() ? c.plugin : c.plugin + "-" + c.variant;
    auto matches = [&](const std::string& globs) {
      return glob_list_matches(globs, c.plugin) || glob_list_matches(globs, label);
    };
    if (!trim(dis).empty() && matches(dis)) {
      c.fate = Fate::kSkipped;
      c.reason = "disabled by LOOM_PLUGINS_DISABLE=" + dis;
    } else if (!trim(sel).empty() && !matches(sel)) {
      c.fate = Fate::kSkipped;
      c.reason = "not selected by LOOM_PLUGINS_SELECT=" + sel;
    } else {
      continue;
    }
    LOOM_LOG_DEBUG("registry", c.path + ": skipped, " + c.reason);
  }
}

}  // namespace loom::registry
