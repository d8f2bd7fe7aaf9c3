// A child process of the `loom` command that may crash, hang or spawn its
// own children (it runs a third-party plugin's code): started with
// posix_spawn + exec, never a bare fork of this possibly multi-threaded
// process, in its own process group so a hung one is killed with whatever it
// started. registry/probe.cpp does the same for libloom's probe helper.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace loom::cli {

// "SIGSEGV" for SIGSEGV, "signal N" for a number without a name.
std::string signal_name(int sig);

// One child: stdin /dev/null, stdout and stderr into one pipe (its output),
// fd 3 the write end of a second pipe (its results); default signal
// dispositions and an empty mask whatever this process set. Not
// thread-safe; the owner polls it with pump() until exited().
class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  ChildProcess() = default;
  ~ChildProcess();  // a child still running is killed (its group) and reaped
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts exe with argv (argv[0] included). "" or the error.
  std::string start(const std::string& exe, const std::vector<std::string>& argv);

  // Waits until something arrives, the child ends, or `until` (at most
  // 50 ms: exits are noticed by polling); appends what arrived on the result
  // pipe to *result and on the output pipe to *output.
  void pump(Clock::time_point until, std::string* result, std::string* output);

  // SIGKILL to its process group, then reaped.
  void kill();

  pid_t pid() const { return pid_; }
  // Reaped, and both pipes at their end (or a second passed since: a
  // grandchild that left the group may hold them open).
  bool exited() const;
  // waitpid's status; meaningful once exited().
  int status() const { return status_; }

 private:
  void reap(bool block);
  void close_pipes();

  pid_t pid_ = -1;
  int result_fd_ = -1, output_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  Clock::time_point reaped_at_;
};

}  // namespace loom::cli
