// The last line of defence of the `loom` command: a subcommand's exception
// (std::bad_alloc from a size nobody bounded, a std::system_error from a
// thread that could not start, a library's std::exception) becomes an error
// message and exit status 1 instead of std::terminate and an abort (rc 134).
// Code below the CLI returns statuses; reaching one of these handlers is a
// bug to report, and the message says what was thrown.
#pragma once

#include <cstdio>
#include <exception>
#include <new>
#include <string>

namespace loom::cli {

// Prints the message for an exception that escaped `command`; returns 1.
inline int report_escaped(const std::string& command, const char* what) noexcept {
  std::fflush(stdout);
  std::fprintf(stderr, "\nloom %s: [cli.%s] stopped by an unexpected exception: %s (please report this)\n",
               command.c_str(), command.c_str(), what);
  return 1;
}

// Runs fn() (returning an exit code); `command` names it in messages ("run").
// The message is printed inside each handler: what() dies with the exception.
template <typename Fn>
int run_guarded(const std::string& command, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return report_escaped(command, "out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return report_escaped(command, e.what());
  } catch (...) {
    return report_escaped(command, "an exception of unknown type");
  }
}

}  // namespace loom::cli
