// Isolated probing applied to the candidate list (registry/probe.hpp):
// settings, the cache, the children, and what their records mean for the
// in-process load that follows.
#include <cerrno>
#include <cstdlib>
#include <string>

#include "loom/runtime/log.hpp"
#include "registry/filters.hpp"
#include "registry/loader.hpp"
#include "registry/probe.hpp"
#include "registry/probe_cache.hpp"
#include "registry/secure_env.hpp"

namespace loom::registry {
namespace {

// The stage a child had reached when it stopped at `step`.
Stage stage_at(const std::string& step) {
  if (step == "query") return Stage::kOpened;
  if (step == "score" || step == "init") return Stage::kNegotiated;
  if (step == "devices") return Stage::kProbed;
  if (step == "shutdown") return Stage::kReady;
  return Stage::kFound;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

bool serves_any(const ProbeRecord& r, const std::vector<std::string>& wanted) {
  for (const auto& d : r.devices) {
    for (const auto& w : wanted) {
      if (d == w) return true;
    }
  }
  return false;
}

}  // namespace

ProbeSettings probe_settings(const Options& options, std::vector<std::string>* warnings) {
  ProbeSettings s;
  s.isolated = options.probe != ProbeMode::kInline;
  if (options.probe == ProbeMode::kDefault && options.use_env) {
    if (const char* v = loom_getenv("LOOM_PLUGIN_PROBE")) {
      const std::string m = v;
      if (m == "inline") {
        s.isolated = false;
      } else if (m != "isolated" && !m.empty()) {
        warnings->push_back("LOOM_PLUGIN_PROBE=" + m + " is not 'isolated' or 'inline'; using isolated");
      }
    }
  }
  // Never probe in process under secure execution, whatever was asked.
  if (secure_execution()) s.isolated = true;
  if (const char* v = options.use_env ? loom_getenv("LOOM_PLUGIN_PROBE_TIMEOUT") : nullptr) {
    char* end = nullptr;
    errno = 0;
    const double t = std::strtod(v, &end);
    if (end == v || *end != '\0' || errno != 0 || !(t > 0) || t > 3600) {
      warnings->push_back(std::string("LOOM_PLUGIN_PROBE_TIMEOUT=") + v +
                          " is not a number of seconds in (0, 3600]; using 5");
    } else {
      s.timeout_s = t;
    }
  }
  if (s.isolated) {
    s.helper = find_probe_helper();
    if (s.helper.empty()) {
      warnings->push_back("[registry.probe] loom-probe was not found next to libloom (" + library_dir() +
                          "): plugins are loaded without isolated probing");
      s.isolated = false;
    }
  }
  s.cache_dir = probe_cache_dir();
  return s;
}

namespace {

// Probe the files at `which` in children and store the records (and in the
// cache, unless the helper itself failed).
void probe_fresh(const std::vector<Candidate>& cands, const std::vector<size_t>& which,
                 const std::vector<std::string>& keys, const ProbeSettings& settings,
                 std::vector<ProbeRecord>* records) {
  if (which.empty()) return;
  std::vector<std::string> paths;
  for (size_t i : which) paths.push_back(cands[i].path);
  LOOM_LOG_DEBUG("registry", "probing " + std::to_string(which.size()) + " plugin file(s) in child processes");
  std::vector<ProbeRecord> got = probe_in_children(settings.helper, paths, settings.timeout_s);
  for (size_t k = 0; k < which.size(); ++k) {
    const size_t i = which[k];
    (*records)[i] = std::move(got[k]);
    // A helper that could not even start says nothing about the file.
    if (!(*records)[i].helper_failed) probe_cache_write(settings.cache_dir, keys[i], (*records)[i]);
  }
}

// The wanted device names that no ready record lists.
std::vector<std::string> unserved(const std::vector<ProbeRecord>& records, const std::vector<bool>& have,
                                  const std::vector<std::string>& wanted) {
  std::vector<std::string> out;
  for (const auto& w : wanted) {
    bool found = false;
    for (size_t i = 0; i < records.size() && !found; ++i) {
      found = have[i] && records[i].finished && records[i].fate == Fate::kReady && serves_any(records[i], {w});
    }
    if (!found) out.push_back(w);
  }
  return out;
}

}  // namespace

void probe_candidates(std::vector<Candidate>& cands, const Options& options, const ProbeSettings& settings) {
  std::vector<size_t> todo;
  std::vector<std::string> keys(cands.size());
  std::vector<ProbeRecord> records(cands.size());
  std::vector<bool> cached(cands.size(), false), have(cands.size(), false);
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!pending(cands[i])) continue;
    keys[i] = probe_cache_key(cands[i].path);
    have[i] = true;
    if (probe_cache_read(settings.cache_dir, keys[i], &records[i])) {
      cached[i] = true;
      continue;
    }
    todo.push_back(i);
  }
  probe_fresh(cands, todo, keys, settings, &records);
  // A device the caller named that no record lists: the cached records may
  // predate something the inputs do not show (a driver reached in a way no
  // file or variable names), so ask those files again before saying no.
  const std::vector<std::string> missing = unserved(records, have, options.wanted_devices);
  if (!missing.empty()) {
    std::vector<size_t> again;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (cached[i]) again.push_back(i), cached[i] = false;
    }
    if (!again.empty()) {
      LOOM_LOG_DEBUG("registry", "no cached probe lists " + join(missing) + "; probing the cached files again");
      probe_fresh(cands, again, keys, settings, &records);
    }
  }
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!have[i]) continue;
    Candidate& c = cands[i];
    const ProbeRecord& r = records[i];
    if (!r.finished) {
      if (r.helper_failed) {
        LOOM_LOG_WARN("registry", load_prefix(c) + r.failure + "; loading it without isolation");
        continue;
      }
      c.stage = stage_at(r.step);
      c.fate = Fate::kFailed;
      c.reason = load_prefix(c) + r.failure + (cached[i] ? " (cached result: the file has not changed since)" : "");
      LOOM_LOG_INFO("registry", c.reason);
      continue;
    }
    if (!options.wanted_devices.empty() && r.fate != Fate::kReady) {
      // Not needed either way; its record from the child says why it would not serve.
      apply_outcome(r, &c);
      continue;
    }
    if (!options.wanted_devices.empty() && !serves_any(r, options.wanted_devices)) {
      c.fate = Fate::kSkipped;
      c.reason = "not loaded: its devices (" + (r.devices.empty() ? std::string("none") : join(r.devices)) +
                 ") are not among the requested " + join(options.wanted_devices);
      LOOM_LOG_DEBUG("registry", c.path + ": " + c.reason);
    }
  }
}

}  // namespace loom::registry
