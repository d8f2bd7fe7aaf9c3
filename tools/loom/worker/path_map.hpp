// LOOM_MPI_PATH_MAP: where a worker finds the files rank 0 names, when its
// host mounts them elsewhere. "/from=/to[:/from2=/to2...]": a path that is
// `from` or starts with `from/` has that prefix replaced by `to`; the longest
// matching `from` wins; other paths stay as they are. Both sides must be
// absolute. Plain value type, no state beyond its pairs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loom/runtime/status.hpp"

namespace loom::cli::worker {

class PathMap {
 public:
  // INVALID_ARGUMENT naming the entry for a malformed spec ("" = no mapping).
  static StatusOr<PathMap> parse(const std::string& spec);
  // `path` through the map (unchanged when no prefix matches).
  std::string apply(const std::string& path) const;
  bool empty() const { return pairs_.empty(); }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

}  // namespace loom::cli::worker
