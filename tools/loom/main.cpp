// The `loom` command: entry point, --help, --version, subcommand dispatch.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.hpp"
#include "loom/plugin.h"

namespace {

const char kHelp[] =
    "loom - run tensor graphs on whatever hardware this machine has\n"
    "\n"
    "usage: loom <command> [options]\n"
    "\n"
    "commands:\n"
    "  devices          list every plugin candidate with its fate (ready, unavailable,\n"
    "                   failed, skipped) and every device with type, memory,\n"
    "                   identity and capabilities\n"
    "  check            run a small graph (matmul, scale, softmax, rms_norm) on one\n"
    "                   device and compare with a host computation\n"
    "  run              generate text with a llama GGUF model on one device: the\n"
    "                   text streams to stdout, speeds and the device to stderr\n"
    "\n"
    "options (every command):\n"
    "  --json                 one JSON object on stdout instead of text\n"
    "  --plugin-path DIR      also search DIR for plugins, before LOOM_PLUGIN_PATH\n"
    "                         (repeatable)\n"
    "options (check):\n"
    "  --device NAME          device to run on (default: the first device of\n"
    "                         LOOM_DEVICES, else of the auto policy, that runs\n"
    "                         every op of the check graph)\n"
    "options (run):\n"
    "  -m, --model FILE       GGUF model (llama architecture; f32, f16, q8_0, q4_0\n"
    "                         weights). Default: $LOOM_MODEL, else\n"
    "                         $LOOM_MODELS_DIR/stories260K.gguf, else\n"
    "                         ../shared/models/stories260K.gguf\n"
    "  -p, --prompt TEXT      text to continue (default: empty, start from BOS)\n"
    "  -n, --n-predict N      tokens to generate at most (default 200; stops at EOS)\n"
    "  --temp T               sampling temperature (default 0: greedy)\n"
    "  --top-k K              keep the K most likely tokens (default 40; 0: all)\n"
    "  --top-p P              keep the most likely tokens up to probability P\n"
    "                         (default 0.95; 1: all)\n"
    "  --seed S               random seed for sampling (default 42)\n"
    "  --batch N              prompt tokens per forward pass (default 32)\n"
    "  --ctx N                context length (default: the model's)\n"
    "  --device NAME          one device (default cpu); several devices need the\n"
    "                         scheduler, not yet available\n"
    "  --threads N            threads of the device (CPU-like devices)\n"
    "  --json                 print one JSON object at the end instead of streaming:\n"
    "                         prompt/generated token ids, text, tokens/s, devices\n"
    "\n"
    "  -h, --help             this help\n"
    "  --version              loom and plugin ABI versions\n"
    "\n"
    "environment:\n"
    "  LOOM_PLUGIN_PATH       colon-separated folders searched for libloom-*.so\n"
    "  LOOM_PLUGINS_SELECT    comma-separated globs: load only matching plugins\n"
    "  LOOM_PLUGINS_DISABLE   comma-separated globs: never load matching plugins\n"
    "  LOOM_DEVICES           device list or policy (cpu, cuda0,cpu, auto, cpu-only)\n"
    "  LOOM_CPU_THREADS       threads of the cpu device (default: all hardware threads)\n"
    "  LOOM_BLAS_THREADS      threads of the blas device (default: all hardware threads)\n"
    "  LOOM_NULL_DEVICES      number of devices the null (skeleton) plugin exposes\n"
    "  LOOM_LOG               log filter, e.g. registry:debug,*:warn\n"
    "  LOOM_MODEL             default model file of 'run'\n"
    "  LOOM_MODELS_DIR        folder searched for stories260K.gguf by 'run'\n"
    "\n"
    "exit status: 0 success, 1 the command failed, 2 bad arguments\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  const std::string cmd = args.front();
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("loom %s (plugin ABI %u.%u)\n", LOOM_VERSION_STRING, LOOM_ABI_VERSION_MAJOR,
                LOOM_ABI_VERSION_MINOR);
    return 0;
  }
  args.erase(args.begin());
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    }
  }
  if (cmd == "devices") return loom::cli::cmd_devices(args);
  if (cmd == "check") return loom::cli::cmd_check(args);
  if (cmd == "run") return loom::cli::cmd_run(args);
  std::fprintf(stderr, "loom: unknown command '%s' (try 'loom --help')\n", cmd.c_str());
  return 2;
}
