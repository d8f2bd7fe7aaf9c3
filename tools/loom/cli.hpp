// Shared pieces of the `loom` command: argument helpers and subcommands.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/registry/registry.hpp"
#include "options/option_parse.hpp"

namespace loom::cli {

// Options every subcommand accepts.
struct CommonOptions {
  std::vector<std::string> plugin_paths;  // --plugin-path DIR (repeatable)
  bool json = false;                      // --json
};

// Parse args for `command` through the option table (option_parse.hpp):
// the options every command takes into *common, all of them into *out.
// "" or the error for a bad-arguments exit (2).
std::string parse_command(Command command, const std::vector<std::string>& args, CommonOptions* common,
                          ParsedOptions* out);

// The registry with --plugin-path folders (made absolute: they are the
// user's own words on the command line). A device_spec that names devices
// (not a policy) loads only the plugins that serve them.
std::unique_ptr<registry::Registry> load_registry(const CommonOptions& opts, const std::string& device_spec = "");

// The model run/bench/plan use when -m is not given: $LOOM_MODEL, else
// $LOOM_MODELS_DIR/stories260K.gguf, else ../shared/models/stories260K.gguf;
// "" when none exists (*tried lists what was looked for).
std::string default_model(std::string* tried);
// The message for "no -m and no default model" (tried: from default_model).
std::string no_model_message(const std::string& tried);

// A progress line on stderr for weights copied into device memory: only when
// stderr is a terminal and the copy is over 100 MB; "\r"-updated per percent,
// ended with a newline. For llm::LoadOptions::progress.
std::function<void(size_t, size_t, const std::string&)> load_progress(const char* command);

// What a model command (run, bench, plan) has once started.
struct ModelCommand {
  CommonOptions common;
  std::unique_ptr<registry::Registry> registry;
  std::vector<registry::Device*> devices;
};
// The start they share: parse the arguments (parse_command), then give
// them to `parse`, which takes the command's own ("" or the error: exit
// 2; both print "<command>: ... (try 'loom <command> --help')"); when
// *model is empty, the default
// model (none found: an error when need_model, else *model stays empty);
// load the registry and select_devices(*device_spec). Returns -1 to go on,
// else the exit code, with the message printed as "<command>: ...".
int start_model_command(const char* command, Command bit, const std::vector<std::string>& args,
                        const std::function<std::string(const ParsedOptions&)>& parse,
                        std::string* model, const std::string* device_spec, bool need_model, ModelCommand* out);

// Prints "<command>: <msg>" (command: "loom run", ...) on stderr; returns 1,
// the exit status of a command that failed.
int fail(const char* command, const std::string& msg);

// --kv-type VALUE: "f16" or "f32" -> the KV cache type; false otherwise.
bool parse_kv_type(const std::string& value, loom_type_t* out);

// The devices a model command uses: `given` (--device LIST or policy) when
// not empty, else $LOOM_DEVICES when set, else cpu. "" or the error message,
// which names where the list came from and points at 'loom devices'.
std::string select_devices(const registry::Registry& reg, const std::string& given,
                           std::vector<registry::Device*>* out);

// The device's loom.details text ("key: value" lines), "" when it has none.
std::string device_details(const registry::Device& d);

int cmd_devices(std::vector<std::string> args);
int cmd_check(std::vector<std::string> args);
int cmd_run(std::vector<std::string> args);
int cmd_plan(std::vector<std::string> args);
int cmd_bench(std::vector<std::string> args);
int cmd_chat(std::vector<std::string> args);
int cmd_tokenize(std::vector<std::string> args);
int cmd_conformance(std::vector<std::string> args);
int cmd_profile(std::vector<std::string> args);
int cmd_serve(std::vector<std::string> args);
int cmd_worker(std::vector<std::string> args);

}  // namespace loom::cli
