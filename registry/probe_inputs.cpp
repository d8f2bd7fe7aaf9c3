#include "registry/probe_inputs.hpp"

#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

extern char** environ;

namespace loom::registry {
namespace {

// The value as the process sees it, read from environ directly: the probe
// helper replaces getenv to watch the plugin, and this must not count.
const char* env_value(const std::string& name) {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name.c_str(), name.size()) == 0 && (*e)[name.size()] == '=') return *e + name.size() + 1;
  }
  return nullptr;
}

std::string fnv_hex(const char* s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a; values may be secrets, so only a hash is stored
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) h = (h ^ *p) * 1099511628211ull;
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

std::string mtime_ns(const struct stat& st) {
  return std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000ll + st.st_mtim.tv_nsec);
}

// "<kind> " then the rest up to the path: "file 12:34 /a b" -> kind file, path "/a b".
bool split_input(const std::string& line, std::string* kind, std::string* name) {
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string::npos) return false;
  *kind = line.substr(0, sp1);
  if (*kind == "env") {
    const size_t sp2 = line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos) return false;
    *name = line.substr(sp1 + 1, sp2 - sp1 - 1);
    return true;
  }
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return false;
  *name = line.substr(sp2 + 1);
  return true;
}

}  // namespace

std::string env_input(const std::string& name) {
  const char* v = env_value(name);
  return "env " + name + " " + (v ? fnv_hex(v) : std::string("unset"));
}

std::string file_input(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "file absent " + path;
  return "file " + std::to_string(static_cast<long long>(st.st_size)) + ":" + mtime_ns(st) + " " + path;
}

std::string dir_input(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "dir absent " + path;
  return "dir " + mtime_ns(st) + " " + path;  // a folder's mtime moves when an entry is added or removed
}

std::vector<std::string> base_inputs() {
  return {env_input("LD_LIBRARY_PATH"), env_input("LD_PRELOAD"), file_input("/etc/ld.so.cache")};
}

std::string changed_input(const std::vector<std::string>& inputs) {
  for (const std::string& line : inputs) {
    std::string kind, name;
    if (!split_input(line, &kind, &name)) return "unreadable input '" + line + "'";
    std::string now;
    if (kind == "env") now = env_input(name);
    else if (kind == "file") now = file_input(name);
    else if (kind == "dir") now = dir_input(name);
    else return "unknown input '" + line + "'";
    if (now != line) return kind + " " + name + " changed";
  }
  return std::string();
}

bool volatile_path(const std::string& path) {
  for (const char* p : {"/proc/", "/sys/", "/dev/", "/run/"}) {
    if (path.compare(0, std::strlen(p), p) == 0) return true;
  }
  return path.empty() || path[0] != '/';
}

std::vector<std::string> loaded_objects() {
  std::vector<std::string> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/') {
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        }
        return 0;
      },
      &out);
  return out;
}

}  // namespace loom::registry
