// Shared pieces of the `loom` command: argument helpers and subcommands.
#pragma once

#include <string>
#include <vector>

#include "loom/registry.hpp"

namespace loom::cli {

// Options every subcommand accepts.
struct CommonOptions {
  std::vector<std::string> plugin_paths;  // --plugin-path DIR (repeatable)
  bool json = false;                      // --json
};

// Parse the common options out of args (removes them); unknown "--x"
// options are left for the subcommand. Returns false and sets error on a
// malformed option.
bool take_common_options(std::vector<std::string>& args, CommonOptions* out, std::string* error);

std::unique_ptr<registry::Registry> load_registry(const CommonOptions& opts);

int cmd_devices(std::vector<std::string> args);
int cmd_check(std::vector<std::string> args);
int cmd_run(std::vector<std::string> args);
int cmd_plan(std::vector<std::string> args);
int cmd_bench(std::vector<std::string> args);

}  // namespace loom::cli
