#include "registry/probe_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loom/runtime/log.hpp"
#include "loom/plugin.h"
#include "registry/probe_inputs.hpp"
#include "registry/secure_env.hpp"

#ifndef LOOM_VERSION_STRING
#define LOOM_VERSION_STRING "0"
#endif

namespace loom::registry {
namespace {

constexpr const char* kMagic = "loom-probe-cache 2";  // 2: records list their inputs

std::string hash_name(const std::string& key) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

std::string absolute_or_empty(const char* v) { return v && v[0] == '/' ? std::string(v) : std::string(); }

}  // namespace

std::string probe_cache_dir() {
  if (secure_execution()) return std::string();
  std::string d = absolute_or_empty(loom_getenv("LOOM_CACHE_DIR"));
  if (!d.empty()) return d;
  d = absolute_or_empty(loom_getenv("XDG_CACHE_HOME"));
  if (!d.empty()) return d + "/loom";
  d = absolute_or_empty(loom_getenv("HOME"));
  if (!d.empty()) return d + "/.cache/loom";
  return std::string();
}

std::string probe_cache_key(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::string();
  std::error_code ec;
  std::string canon = std::filesystem::canonical(path, ec).string();
  if (ec) canon = path;
  std::ostringstream k;
  k << canon << " size=" << st.st_size << " mtime=" << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec
    << " ino=" << st.st_ino << " dev=" << st.st_dev << " abi=" << LOOM_ABI_VERSION
    << " loom=" << LOOM_VERSION_STRING;
  return k.str();
}

bool probe_cache_read(const std::string& dir, const std::string& key, ProbeRecord* out) {
  if (dir.empty() || key.empty()) return false;
  std::ifstream in(dir + "/probe/" + hash_name(key) + ".txt");
  if (!in) return false;
  std::string magic, key_line;
  if (!std::getline(in, magic) || magic != kMagic) return false;
  if (!std::getline(in, key_line) || key_line != "key " + key) return false;  // a hash collision
  std::stringstream rest;
  rest << in.rdbuf();
  bool complete = false;
  ProbeRecord r = parse_probe_record(rest.str(), &complete);
  if (!complete) return false;
  // A record made under another environment or before a driver changed
  // says nothing about now: probe again.
  const std::string changed = changed_input(r.inputs);
  if (!changed.empty()) {
    LOOM_LOG_DEBUG("registry", "probe cache: " + key.substr(0, key.find(' ')) + ": " + changed + "; probing again");
    return false;
  }
  *out = std::move(r);
  return true;
}

void probe_cache_write(const std::string& dir, const std::string& key, const ProbeRecord& r) {
  if (dir.empty() || key.empty()) return;
  std::error_code ec;
  const std::string folder = dir + "/probe";
  std::filesystem::create_directories(folder, ec);
  if (ec) {
    LOOM_LOG_DEBUG("registry", "probe cache " + folder + ": " + ec.message());
    return;
  }
  const std::string final_path = folder + "/" + hash_name(key) + ".txt";
  const std::string tmp = final_path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream o(tmp, std::ios::trunc);
    o << kMagic << "\nkey " << key << "\n" << format_probe_record(r);
    if (!o) {
      LOOM_LOG_DEBUG("registry", "probe cache: cannot write " + tmp);
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) {
    LOOM_LOG_DEBUG("registry", "probe cache: " + ec.message());
    std::filesystem::remove(tmp, ec);
  }
}

}  // namespace loom::registry
