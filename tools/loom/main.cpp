// The `loom` command: entry point, --help (help.hpp, from the option
// table), --version, subcommand dispatch.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.hpp"
#include "command_guard.hpp"
#include "loom/plugin.h"
#include "options/help.hpp"
#include "worker/mpi_session.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(loom::cli::main_help().c_str(), stderr);
    return 2;
  }
  const std::string cmd = args.front();
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(loom::cli::main_help().c_str(), stdout);
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
      const loom::cli::CommandSpec* c = loom::cli::find_command(cmd);
      std::fputs(c ? loom::cli::command_help(*c).c_str() : loom::cli::main_help().c_str(), stdout);
      return 0;
    }
  }
  using Command = int (*)(std::vector<std::string>);
  Command fn = cmd == "devices"    ? loom::cli::cmd_devices
               : cmd == "check"    ? loom::cli::cmd_check
               : cmd == "run"      ? loom::cli::cmd_run
               : cmd == "plan"     ? loom::cli::cmd_plan
               : cmd == "bench"    ? loom::cli::cmd_bench
               : cmd == "tokenize" ? loom::cli::cmd_tokenize
               : cmd == "chat"     ? loom::cli::cmd_chat
               : cmd == "conformance" ? loom::cli::cmd_conformance
               : cmd == "profile"  ? loom::cli::cmd_profile
               : cmd == "serve"    ? loom::cli::cmd_serve
               : cmd == "worker"   ? loom::cli::cmd_worker
                                   : nullptr;
  if (fn == nullptr) {
    std::fprintf(stderr, "loom: unknown command '%s' (try 'loom --help')\n", cmd.c_str());
    return 2;
  }
  auto run = [&] { return loom::cli::run_guarded(cmd, [&] { return fn(args); }); };
  // Under mpirun/srun: ranks >= 1 serve, rank 0 runs the command (worker/mpi_session.hpp).
  if (const int rc = loom::cli::worker::run_under_mpi(cmd, args, run); rc >= 0) return rc;
  return run();
}
