#include "cli.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

namespace loom::cli {

std::string parse_command(Command command, const std::vector<std::string>& args, CommonOptions* common,
                          ParsedOptions* out) {
  if (std::string e = parse_options(command, args, out); !e.empty()) return e;
  common->json = out->has("--json");
  common->plugin_paths = out->all("--plugin-path");
  return "";
}

std::unique_ptr<registry::Registry> load_registry(const CommonOptions& opts, const std::string& device_spec) {
  registry::Options ro;
  for (const auto& p : opts.plugin_paths) {
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(p, ec);
    ro.paths.push_back(ec ? p : abs.string());
  }
  ro.wanted_devices = registry::DeviceSpec::resolve(device_spec, "--device").names;
  return registry::Registry::load(ro);
}

std::string default_model(std::string* tried) {
  constexpr char kDefaultModel[] = "stories260K.gguf";
  std::vector<std::string> candidates;
  if (const char* m = std::getenv("LOOM_MODEL"); m && *m) candidates.push_back(m);
  if (const char* d = std::getenv("LOOM_MODELS_DIR"); d && *d) candidates.push_back(std::string(d) + "/" + kDefaultModel);
  candidates.push_back(std::string("../shared/models/") + kDefaultModel);
  for (const auto& c : candidates) {
    struct stat st;
    if (::stat(c.c_str(), &st) == 0) return c;
    *tried += (tried->empty() ? "" : ", ") + c;
  }
  return "";
}

std::string no_model_message(const std::string& tried) {
  return "no model given and none found (tried " + tried +
         "); pass -m FILE.gguf or set LOOM_MODEL. stories260K.gguf is at "
         "https://huggingface.co/ggml-org/models (tinyllamas/stories260K.gguf)";
}

std::function<void(size_t, size_t, const std::string&)> load_progress(const char* command) {
  if (!::isatty(2)) return nullptr;
  auto last = std::make_shared<int>(-1);
  std::string cmd = command;
  return [last, cmd](size_t done, size_t total, const std::string& device) {
    if (total < size_t{100} * 1000 * 1000) return;
    const int pct = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
    if (pct == *last) return;
    *last = pct;
    std::fprintf(stderr, "\r%s: loading weights to %s: %3d%% (%.1f of %.1f MiB)", cmd.c_str(), device.c_str(), pct,
                 static_cast<double>(done) / 1048576.0, static_cast<double>(total) / 1048576.0);
    if (done >= total) {
      std::fputc('\n', stderr);
      *last = -1;
    }
  };
}

bool parse_kv_type(const std::string& value, loom_type_t* out) {
  if (value == "f16") {
    *out = LOOM_TYPE_F16;
  } else if (value == "f32") {
    *out = LOOM_TYPE_F32;
  } else if (value == "q8_0") {
    *out = LOOM_TYPE_Q8_0;
  } else {
    return false;
  }
  return true;
}

std::string select_devices(const registry::Registry& reg, const std::string& given,
                           std::vector<registry::Device*>* out) {
  const registry::DeviceSpec spec = registry::DeviceSpec::resolve(given, "--device");
  auto sel = reg.select(spec);
  if (!sel.ok()) return sel.status().message();
  *out = std::move(sel).value();
  if (!spec.repeated.empty()) {
    std::string names, used;
    for (const std::string& n : spec.repeated) names += (names.empty() ? "'" : ", '") + n + "'";
    for (const registry::Device* d : *out) used += (used.empty() ? "" : ",") + d->name();
    std::fprintf(stderr, "loom: note: %s names %s more than once; each device is used once: %s\n",
                 spec.origin.c_str(), names.c_str(), used.c_str());
  }
  return "";
}

int fail(const char* command, const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", command, msg.c_str());
  return 1;
}

int start_model_command(const char* command, Command bit, const std::vector<std::string>& args,
                        const std::function<std::string(const ParsedOptions&)>& parse,
                        std::string* model, const std::string* device_spec, bool need_model, ModelCommand* out) {
  ParsedOptions parsed;
  std::string error = parse_command(bit, args, &out->common, &parsed);
  if (error.empty()) error = parse(parsed);
  if (!error.empty()) {
    std::fprintf(stderr, "%s: %s (try '%s --help')\n", command, error.c_str(), command);
    return 2;
  }
  if (model->empty()) {
    std::string tried;
    *model = default_model(&tried);
    if (model->empty() && need_model) error = no_model_message(tried);
  }
  if (error.empty()) {
    out->registry = load_registry(out->common, *device_spec);
    error = select_devices(*out->registry, *device_spec, &out->devices);
  }
  if (!error.empty()) {
    std::fprintf(stderr, "%s: %s\n", command, error.c_str());
    return 1;
  }
  return -1;
}

}  // namespace loom::cli
