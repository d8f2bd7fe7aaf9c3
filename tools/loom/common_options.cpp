#include "cli.hpp"

namespace loom::cli {

bool take_common_options(std::vector<std::string>& args, CommonOptions* out, std::string* error) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      out->json = true;
    } else if (a == "--plugin-path") {
      if (i + 1 >= args.size()) {
        *error = "--plugin-path needs a folder";
        return false;
      }
      out->plugin_paths.push_back(args[++i]);
    } else if (a.rfind("--plugin-path=", 0) == 0) {
      out->plugin_paths.push_back(a.substr(14));
    } else {
      rest.push_back(a);
    }
  }
  args = std::move(rest);
  return true;
}

std::unique_ptr<registry::Registry> load_registry(const CommonOptions& opts) {
  registry::Options ro;
  ro.paths = opts.plugin_paths;
  return registry::Registry::load(ro);
}

}  // namespace loom::cli
