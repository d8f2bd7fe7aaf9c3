#include "icd_report.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace loom::vulkan {
namespace {

std::vector<std::string> split_paths(const char* list) {
  std::vector<std::string> out;
  std::stringstream ss(list ? list : "");
  std::string item;
  while (std::getline(ss, item, ':')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// The folders the loader searches when no variable names the files (the
// Vulkan loader's documented Linux search order).
std::vector<std::string> default_folders() {
  const std::string home = env_or("HOME", "");
  std::vector<std::string> roots;
  roots.push_back(env_or("XDG_CONFIG_HOME", home.empty() ? "" : home + "/.config"));
  for (const auto& d : split_paths(env_or("XDG_CONFIG_DIRS", "/etc/xdg").c_str())) roots.push_back(d);
  roots.push_back("/etc");
  roots.push_back(env_or("XDG_DATA_HOME", home.empty() ? "" : home + "/.local/share"));
  for (const auto& d : split_paths(env_or("XDG_DATA_DIRS", "/usr/local/share:/usr/share").c_str())) roots.push_back(d);
  std::vector<std::string> out;
  for (const auto& r : roots) {
    if (!r.empty()) out.push_back(r + "/vulkan/icd.d");
  }
  return out;
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Every *.json in a folder (sorted), or the path itself when it is a file.
void add_manifests(const std::string& path, std::vector<std::string>* out) {
  if (!is_dir(path)) {
    out->push_back(path);
    return;
  }
  std::vector<std::string> found;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) found.push_back(path + "/" + n);
    }
    closedir(d);
  }
  std::sort(found.begin(), found.end());
  out->insert(out->end(), found.begin(), found.end());
}

// The "library_path" string of a manifest; "" when the file has none or
// cannot be read (*why says which).
std::string library_path(const std::string& manifest, std::string* why) {
  std::ifstream in(manifest);
  if (!in) {
    *why = "cannot be read";
    return "";
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  size_t k = text.find("\"library_path\"");
  size_t q1 = k == std::string::npos ? k : text.find('"', text.find(':', k) + 1);
  size_t q2 = q1 == std::string::npos ? q1 : text.find('"', q1 + 1);
  if (q2 == std::string::npos) {
    *why = "names no library_path";
    return "";
  }
  std::string lib = text.substr(q1 + 1, q2 - q1 - 1);
  // A relative path with a slash is relative to the manifest's folder; a
  // bare name goes through the dynamic linker's search.
  if (!lib.empty() && lib[0] != '/' && lib.find('/') != std::string::npos) {
    lib = manifest.substr(0, manifest.rfind('/') + 1) + lib;
  }
  return lib;
}

std::string try_load(const std::string& lib) {
  // RTLD_NODELETE: driver libraries are not safe to unload and load again.
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (h == nullptr) {
    const char* e = dlerror();
    return std::string("does not load: ") + (e ? e : "dlopen failed");
  }
  dlclose(h);
  return "loads";
}

}  // namespace

std::string icd_report() {
  std::vector<std::string> where;
  std::string source;
  const char* named = std::getenv("VK_DRIVER_FILES");
  if (!(named && *named)) named = std::getenv("VK_ICD_FILENAMES");
  if (named && *named) {
    where = split_paths(named);
    source = std::getenv("VK_DRIVER_FILES") && *std::getenv("VK_DRIVER_FILES") ? "VK_DRIVER_FILES" : "VK_ICD_FILENAMES";
  } else {
    where = default_folders();
  }
  for (const auto& p : split_paths(std::getenv("VK_ADD_DRIVER_FILES"))) where.push_back(p);
  std::vector<std::string> manifests;
  for (const auto& p : where) add_manifests(p, &manifests);
  manifests.erase(std::remove_if(manifests.begin(), manifests.end(),
                                 [](const std::string& m) {
                                   struct stat st;
                                   return ::stat(m.c_str(), &st) != 0;
                                 }),
                  manifests.end());
  if (manifests.empty()) {
    std::string folders;
    for (const auto& p : where) folders += (folders.empty() ? "" : ", ") + p;
    return "no Vulkan driver manifest (ICD .json) in " + (source.empty() ? folders : source + "=" + folders) +
           ": install the GPU's Vulkan driver (e.g. mesa-vulkan-drivers, or the NVIDIA driver with its "
           "Vulkan ICD)";
  }
  std::string out = "ICD manifests" + (source.empty() ? std::string() : " (from " + source + ")") + ": ";
  for (size_t i = 0; i < manifests.size(); ++i) {
    std::string why;
    const std::string lib = library_path(manifests[i], &why);
    out += (i ? "; " : "") + manifests[i] + " -> " + (lib.empty() ? why : lib + " " + try_load(lib));
  }
  return out;
}

}  // namespace loom::vulkan
