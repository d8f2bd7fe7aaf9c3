// Helpers shared by the registry tests: scoped environment variables,
// temporary folders, hermetic registry options and record lookups.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "loom/registry/registry.hpp"

namespace loom::test {

namespace fs = std::filesystem;

// Sets (or unsets, with std::nullopt) an environment variable and restores
// the previous value on destruction.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Clears every loom variable for a test's duration (restored afterwards).
class CleanLoomEnv {
 public:
  CleanLoomEnv()
      : path_("LOOM_PLUGIN_PATH", std::nullopt),
        select_("LOOM_PLUGINS_SELECT", std::nullopt),
        disable_("LOOM_PLUGINS_DISABLE", std::nullopt),
        devices_("LOOM_DEVICES", std::nullopt),
        null_("LOOM_NULL_DEVICES", std::nullopt) {}

 private:
  ScopedEnv path_, select_, disable_, devices_, null_;
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/loom-registry-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  // Copy a file in (a real copy: a different inode, so dlopen loads it anew).
  std::string copy_in(const std::string& from, const std::string& name) const {
    std::string to = path_ + "/" + name;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    return to;
  }

 private:
  std::string path_;
};

inline std::string plugin_dir() { return LOOM_TEST_PLUGIN_DIR; }
inline std::string fake_dir() { return LOOM_TEST_FAKE_DIR; }
inline std::string null_plugin_path() { return plugin_dir() + "/libloom-null.so"; }

// Only the given paths: no environment, no library or install folder.
inline registry::Options only(std::vector<std::string> paths, bool use_env = false) {
  registry::Options o;
  o.paths = std::move(paths);
  o.use_env = use_env;
  o.search_library_dir = false;
  o.search_install_dir = false;
  return o;
}

inline const registry::Candidate* find_candidate(const registry::Registry& reg, const std::string& plugin,
                                                 const std::string& variant = "") {
  for (const auto& c : reg.candidates()) {
    if (c.plugin == plugin && c.variant == variant) return &c;
  }
  return nullptr;
}

inline std::string describe(const registry::Registry& reg) {
  std::string s;
  for (const auto& c : reg.candidates()) {
    s += "  " + c.plugin + (c.variant.empty() ? "" : "-" + c.variant) + " " + registry::fate_name(c.fate) +
         "/" + registry::stage_name(c.stage) + " [" + c.origin + "] " + c.path + ": " + c.reason + "\n";
  }
  for (const auto* d : reg.devices()) s += "  device " + d->name() + " (" + d->info().plugin + ")\n";
  for (const auto& d : reg.duplicates()) s += "  duplicate " + d + "\n";
  return s;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Whether the cpu plugin in the build's lib folder loads (it is written in
// parallel; tests that need it skip until it does).
inline bool cpu_plugin_ready() {
  auto reg = registry::Registry::load(only({plugin_dir() + "/libloom-cpu.so"}));
  const auto* c = find_candidate(*reg, "cpu");
  return c && c->fate == registry::Fate::kReady && reg->device("cpu") != nullptr;
}

}  // namespace loom::test
