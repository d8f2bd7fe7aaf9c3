#include "registry/discovery.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "loom/runtime/log.hpp"
#include "registry/secure_env.hpp"

#ifndef LOOM_INSTALL_PLUGIN_DIR
#define LOOM_INSTALL_PLUGIN_DIR ""
#endif

namespace fs = std::filesystem;

namespace loom::registry {
namespace {

constexpr const char* kPrefix = "libloom-";
constexpr const char* kSuffix = ".so";

struct SearchRoot {
  std::string path;
  std::string origin;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t next = s.find(sep, pos);
    if (next == std::string::npos) next = s.size();
    if (next > pos) out.push_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

constexpr const char* kLibraryOrigin = "library folder";
constexpr const char* kInstallOrigin = "install folder";

std::vector<SearchRoot> search_roots(const Options& options, std::vector<std::string>* warnings) {
  std::vector<SearchRoot> roots;
  auto add = [&](const std::string& p, const char* origin) {
    if (!p.empty() && p[0] == '/') {
      roots.push_back({p, origin});
      return;
    }
    warnings->push_back(std::string("[registry.discover] search path '") + p + "' (" + origin +
                        ") is relative and was not searched: a plugin folder must not depend on the current "
                        "directory");
  };
  for (const auto& p : options.paths) add(p, "application");
  if (options.use_env) {
    if (const char* env = loom_getenv("LOOM_PLUGIN_PATH")) {
      for (const auto& p : split(env, ':')) add(p, "LOOM_PLUGIN_PATH");
    } else if (secure_execution() && std::getenv("LOOM_PLUGIN_PATH")) {
      warnings->push_back("[registry.discover] LOOM_PLUGIN_PATH is ignored: this process runs with raised "
                          "privileges (secure execution)");
    }
  }
  if (options.search_library_dir) {
    // The build tree keeps plugins beside libloom; an install keeps them in
    // <folder of libloom>/loom, so any --prefix finds its own plugins.
    std::string dir = library_dir();
    if (!dir.empty()) {
      roots.push_back({dir, kLibraryOrigin});
      roots.push_back({dir + "/loom", kLibraryOrigin});
    }
  }
  if (options.search_install_dir && *LOOM_INSTALL_PLUGIN_DIR) {
    roots.push_back({LOOM_INSTALL_PLUGIN_DIR, kInstallOrigin});
  }
  return roots;
}

std::string canonical_or_same(const std::string& path) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return path;
  std::string s = c.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();  // "dir/" and "dir" are one folder
  return s;
}

std::string file_kind(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "cannot stat it";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISDIR(st.st_mode)) return "a folder";
  return "not a regular file";
}

// Plugin files directly inside a folder, sorted by name for a stable order.
std::vector<fs::path> plugin_files_in(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string plugin, variant;
    if (!parse_plugin_file_name(it->path().filename().string(), &plugin, &variant)) continue;
    std::error_code ec2;
    if (it->is_directory(ec2)) continue;
    files.push_back(it->path());
  }
  if (ec) LOOM_LOG_DEBUG("registry", "cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

bool parse_plugin_file_name(const std::string& file_name, std::string* plugin,
                            std::string* variant) {
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (file_name.size() <= prefix.size() + suffix.size()) return false;
  if (file_name.compare(0, prefix.size(), prefix) != 0) return false;
  if (file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  std::string stem = file_name.substr(prefix.size(), file_name.size() - prefix.size() - suffix.size());
  size_t dash = stem.find('-');
  std::string p = stem.substr(0, dash);
  std::string v = dash == std::string::npos ? std::string() : stem.substr(dash + 1);
  if (p.empty() || (dash != std::string::npos && v.empty())) return false;
  *plugin = p;
  *variant = v;
  return true;
}

bool is_builtin_origin(const std::string& origin) { return origin == kLibraryOrigin || origin == kInstallOrigin; }

std::vector<Candidate> discover(const Options& options, std::vector<std::string>* warnings) {
  std::vector<Candidate> out;
  std::map<std::string, std::string> first_by_name;  // file name -> path that won
  std::set<std::string> searched;                      // canonical folders and files

  auto add_file = [&](const fs::path& path, const std::string& origin) {
    Candidate c;
    c.path = path.string();
    c.origin = origin;
    std::string file_name = path.filename().string();
    if (!parse_plugin_file_name(file_name, &c.plugin, &c.variant)) {
      // Only explicit files get here: still recorded, never silently dropped.
      c.plugin = path.stem().string();
      c.fate = Fate::kFailed;
      c.reason = "[registry.discover] " + file_name +
                 ": file name does not match libloom-<plugin>[-<variant>].so";
      out.push_back(std::move(c));
      return;
    }
    // dlopen of a FIFO or a device blocks or reads forever: regular files only.
    struct stat st;
    if (::stat(c.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      c.fate = Fate::kFailed;
      c.reason = "[registry.discover] " + file_name + ": not a regular file (" + file_kind(c.path) +
                 "), not loaded";
      out.push_back(std::move(c));
      return;
    }
    auto it = first_by_name.find(file_name);
    if (it != first_by_name.end()) {
      c.fate = Fate::kSkipped;
      c.reason = "duplicate of " + it->second;
    } else {
      first_by_name.emplace(file_name, c.path);
    }
    LOOM_LOG_DEBUG("registry", "found " + c.path + " (" + origin + ")" +
                                   (c.fate == Fate::kSkipped ? ", " + c.reason : ""));
    out.push_back(std::move(c));
  };

  for (const auto& root : search_roots(options, warnings)) {
    std::error_code ec;
    fs::file_status st = fs::status(root.path, ec);
    if (ec || !fs::exists(st)) {
      LOOM_LOG_DEBUG("registry", "search path " + root.path + " (" + root.origin + ") does not exist");
      continue;
    }
    std::string canon = canonical_or_same(root.path);
    if (!searched.insert(canon).second) {
      LOOM_LOG_DEBUG("registry", "search path " + root.path + " (" + root.origin + ") already searched");
      continue;
    }
    if (fs::is_directory(st)) {
      LOOM_LOG_DEBUG("registry", "searching " + root.path + " (" + root.origin + ")");
      for (const auto& f : plugin_files_in(root.path)) {
        // A file already reached through an explicit file path is not listed again.
        if (searched.count(canonical_or_same(f.string()))) continue;
        add_file(f, root.origin);
      }
    } else {
      add_file(fs::path(root.path), root.origin);
    }
  }
  return out;
}

}  // namespace loom::registry
