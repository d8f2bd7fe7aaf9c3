#include "worker/path_map.hpp"

namespace loom::cli::worker {
namespace {

// "/a/b/" -> "/a/b" (but "/" stays "/").
std::string trim_slash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

StatusOr<PathMap> PathMap::parse(const std::string& spec) {
  PathMap m;
  size_t start = 0;
  while (start <= spec.size() && !spec.empty()) {
    size_t end = spec.find(':', start);
    if (end == std::string::npos) end = spec.size();
    const std::string entry = spec.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || entry.find('=', eq + 1) != std::string::npos) {
      return invalid_argument("[worker.path_map] LOOM_MPI_PATH_MAP entry '" + entry + "' is not /from=/to");
    }
    std::string from = trim_slash(entry.substr(0, eq)), to = trim_slash(entry.substr(eq + 1));
    if (from.empty() || to.empty() || from[0] != '/' || to[0] != '/') {
      return invalid_argument("[worker.path_map] LOOM_MPI_PATH_MAP entry '" + entry + "': both paths must be absolute");
    }
    m.pairs_.emplace_back(std::move(from), std::move(to));
  }
  return m;
}

std::string PathMap::apply(const std::string& path) const {
  const std::pair<std::string, std::string>* best = nullptr;
  for (const auto& p : pairs_) {
    const std::string& from = p.first;
    const bool match = from == "/" ? !path.empty() && path[0] == '/'
                                   : path.compare(0, from.size(), from) == 0 &&
                                         (path.size() == from.size() || path[from.size()] == '/');
    if (match && (best == nullptr || from.size() > best->first.size())) best = &p;
  }
  if (best == nullptr) return path;
  if (best->first == "/") return (best->second == "/" ? "" : best->second) + path;
  std::string rest = path.substr(best->first.size());
  return best->second == "/" ? (rest.empty() ? "/" : rest) : best->second + rest;
}

}  // namespace loom::cli::worker
