#include "conformance_cli/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace loom::cli {
namespace {

constexpr int kResultFd = 3;  // the child's end of the result pipe
constexpr auto kPollSlice = std::chrono::milliseconds(50);
constexpr auto kDrainGrace = std::chrono::seconds(1);

// Reads what is there; closes *fd at its end or on an error.
void drain(int* fd, std::string* into) {
  char buf[8192];
  const ssize_t n = ::read(*fd, buf, sizeof buf);
  if (n > 0) {
    into->append(buf, static_cast<size_t>(n));
    return;
  }
  if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    ::close(*fd);
    *fd = -1;
  }
}

}  // namespace

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) kill();
  close_pipes();
}

std::string ChildProcess::start(const std::string& exe, const std::vector<std::string>& argv) {
  int res[2], out[2];
  if (::pipe2(res, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(res[0]);
    ::close(res[1]);
    return std::string("pipe: ") + std::strerror(e);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  posix_spawn_file_actions_adddup2(&fa, res[1], kResultFd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(res[1]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(res[0]);
    ::close(out[0]);
    return exe + ": " + std::strerror(rc);
  }
  pid_ = pid;
  result_fd_ = res[0];
  output_fd_ = out[0];
  return "";
}

void ChildProcess::pump(Clock::time_point until, std::string* result, std::string* output) {
  std::vector<pollfd> fds;
  if (result_fd_ >= 0) fds.push_back({result_fd_, POLLIN, 0});
  if (output_fd_ >= 0) fds.push_back({output_fd_, POLLIN, 0});
  const auto wait = std::clamp(until - Clock::now(), Clock::duration::zero(),
                               std::chrono::duration_cast<Clock::duration>(kPollSlice));
  const int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
  if (fds.empty()) {
    ::usleep(static_cast<useconds_t>(ms) * 1000);
  } else if (::poll(fds.data(), fds.size(), ms) > 0) {
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == result_fd_) drain(&result_fd_, result);
      else drain(&output_fd_, output);
    }
  }
  if (!reaped_) reap(false);
  if (exited()) close_pipes();
}

void ChildProcess::reap(bool block) {
  // Seen exited but not yet reaped, its pid still names the group: end what
  // it left running there, then reap (a reaped pid could be reused).
  siginfo_t info{};
  const int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, flags) != 0) {
    if (errno == ECHILD) reaped_ = true, reaped_at_ = Clock::now();  // reaped elsewhere: status unknown
    return;
  }
  if (info.si_pid != pid_) return;
  ::kill(-pid_, SIGKILL);
  while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  reaped_at_ = Clock::now();
}

void ChildProcess::kill() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  reap(true);
}

bool ChildProcess::exited() const {
  if (!reaped_) return false;
  return (result_fd_ < 0 && output_fd_ < 0) || Clock::now() - reaped_at_ >= kDrainGrace;
}

void ChildProcess::close_pipes() {
  if (result_fd_ >= 0) ::close(result_fd_);
  if (output_fd_ >= 0) ::close(output_fd_);
  result_fd_ = output_fd_ = -1;
}

}  // namespace loom::cli
