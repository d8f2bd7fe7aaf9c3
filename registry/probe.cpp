#include "registry/probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "loom/runtime/log.hpp"
#include "registry/discovery.hpp"
#include "registry/loader.hpp"
#include "registry/plugin_handle.hpp"
#include "registry/probe_inputs.hpp"

#ifndef LOOM_INSTALL_PLUGIN_DIR
#define LOOM_INSTALL_PLUGIN_DIR ""
#endif

extern char** environ;

namespace loom::registry {
namespace {

constexpr const char* kHelperName = "loom-probe";
constexpr size_t kParallel = 8;        // children at once
constexpr size_t kStderrKeep = 2048;  // tail of the child's stderr kept for the reason

bool is_executable_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string step_text(const std::string& step) {
  if (step.empty() || step == "start") return "before loading the library";
  if (step == "open") return "while loading the library (dlopen, its constructors)";
  if (step == "query") return "in " LOOM_PLUGIN_QUERY_SYMBOL;
  if (step == "devices") return "while listing devices (device_count, device_get, get_props)";
  return "in " + step;
}

// Last non-empty line of the child's stderr, for the reason.
std::string last_line(const std::string& s) {
  size_t end = s.find_last_not_of("\n\r ");
  if (end == std::string::npos) return std::string();
  size_t begin = s.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return s.substr(begin, end - begin + 1);
}

struct Child {
  size_t index = 0;
  pid_t pid = -1;
  int out = -1, err = -1;  // read ends
  std::string out_text, err_text;
  std::chrono::steady_clock::time_point deadline;
  bool reaped = false, timed_out = false;
  int status = 0;
};

bool spawn(const std::string& helper, const std::string& path, double timeout_s, Child* c) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return false;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_adddup2(&fa, out[1], 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a plugin's own children die with it; default
  // signal handling and mask, whatever the host installed.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::string fd = "3";
  std::vector<char*> argv = {const_cast<char*>(helper.c_str()), const_cast<char*>("--fd"), fd.data(),
                             const_cast<char*>(path.c_str()), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, helper.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    LOOM_LOG_WARN("registry", "[registry.probe] cannot start " + helper + ": " + std::strerror(rc));
    return false;
  }
  c->pid = pid;
  c->out = out[0];
  c->err = err[0];
  c->deadline = std::chrono::steady_clock::now() +
                std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  return true;
}

void drain(int* fd, std::string* into, size_t keep) {
  char buf[4096];
  ssize_t n = ::read(*fd, buf, sizeof buf);
  if (n > 0) {
    into->append(buf, static_cast<size_t>(n));
    if (keep && into->size() > 2 * keep) into->erase(0, into->size() - keep);
    return;
  }
  if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    ::close(*fd);
    *fd = -1;
  }
}

ProbeRecord finish(const Child& c, double timeout_s) {
  bool complete = false;
  ProbeRecord r = parse_probe_record(c.out_text, &complete);
  const std::string where = step_text(r.step);
  std::string failure;
  if (r.step.empty()) {
    // Not even the first line: the helper failed before it touched the file.
    ProbeRecord bad;
    bad.helper_failed = true;
    bad.failure = "the probe helper did not run (" +
                  (WIFSIGNALED(c.status) ? signal_text(WTERMSIG(c.status))
                                         : "exit status " + std::to_string(WEXITSTATUS(c.status))) +
                  ")";
    std::string tail = last_line(c.err_text);
    if (!tail.empty()) bad.failure += ": " + tail.substr(0, 300);
    return bad;
  }
  if (c.timed_out) {
    char t[32];
    std::snprintf(t, sizeof t, "%g", timeout_s);
    failure = std::string("no answer in ") + t + " s (" + where + ")";
  } else if (WIFSIGNALED(c.status)) {
    failure = "crashed with " + signal_text(WTERMSIG(c.status)) + " " + where;
  } else if (WIFEXITED(c.status) && (WEXITSTATUS(c.status) != 0 || !complete)) {
    failure = "exited with status " + std::to_string(WEXITSTATUS(c.status)) + " " + where;
  } else if (!complete) {
    failure = "stopped without a complete answer " + where;
  }
  if (failure.empty()) {
    r.finished = true;
    return r;
  }
  ProbeRecord bad;
  bad.step = r.step;
  bad.inputs = std::move(r.inputs);  // what it had read before it stopped
  bad.failure = failure + ", probed in a child";
  std::string tail = last_line(c.err_text);
  if (!tail.empty()) bad.failure += "; its last words: " + tail.substr(0, 300);
  return bad;
}

}  // namespace

std::string find_probe_helper() {
  const std::string dir = library_dir();
  std::vector<std::string> places;
  if (!dir.empty()) {
    places.push_back(dir + "/" + kHelperName);
    places.push_back(dir + "/loom/" + kHelperName);
  }
  if (*LOOM_INSTALL_PLUGIN_DIR) places.push_back(std::string(LOOM_INSTALL_PLUGIN_DIR) + "/" + kHelperName);
  for (const auto& p : places) {
    if (is_executable_file(p)) return p;
  }
  return std::string();
}

std::vector<ProbeRecord> probe_in_children(const std::string& helper, const std::vector<std::string>& paths,
                                           double timeout_s) {
  std::vector<ProbeRecord> out(paths.size());
  std::vector<Child> running;
  size_t next = 0;
  while (next < paths.size() || !running.empty()) {
    while (next < paths.size() && running.size() < kParallel) {
      Child c;
      c.index = next;
      if (!spawn(helper, paths[next], timeout_s, &c)) {
        out[next].helper_failed = true;
        out[next].failure = "could not start the probe helper " + helper;
      } else {
        running.push_back(std::move(c));
      }
      ++next;
    }
    if (running.empty()) continue;
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, bool>> owner;  // child, is stderr
    auto now = std::chrono::steady_clock::now();
    auto wait_until = running.front().deadline;
    for (size_t k = 0; k < running.size(); ++k) {
      Child& c = running[k];
      wait_until = std::min(wait_until, c.deadline);
      if (c.out >= 0) fds.push_back({c.out, POLLIN, 0}), owner.push_back({k, false});
      if (c.err >= 0) fds.push_back({c.err, POLLIN, 0}), owner.push_back({k, true});
    }
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(wait_until - now).count());
    ms = std::clamp(ms, 0, 20);  // reap and check deadlines at least this often
    if (::poll(fds.data(), fds.size(), fds.empty() ? 0 : ms) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        Child& c = running[owner[i].first];
        if (owner[i].second) drain(&c.err, &c.err_text, kStderrKeep);
        else drain(&c.out, &c.out_text, 0);
      }
    } else if (fds.empty()) {
      ::usleep(static_cast<useconds_t>(ms) * 1000);
    }
    now = std::chrono::steady_clock::now();
    for (size_t k = 0; k < running.size();) {
      Child& c = running[k];
      if (!c.reaped) {
        const pid_t w = ::waitpid(c.pid, &c.status, WNOHANG);
        if (w == c.pid) {
          c.reaped = true;
        } else if (w < 0 && errno == ECHILD) {
          c.reaped = true;  // the host ignores SIGCHLD: reaped already, status unknown
          c.status = 0;
        }
      }
      if (!c.reaped && now >= c.deadline) {
        ::kill(-c.pid, SIGKILL);  // the whole group
        ::kill(c.pid, SIGKILL);
        ::waitpid(c.pid, &c.status, 0);
        c.reaped = c.timed_out = true;
      }
      // Done once it exited and its pipes are drained (a grandchild holding
      // them open is not waited for past the deadline).
      bool pipes_done = (c.out < 0 && c.err < 0) || now >= c.deadline;
      if (c.reaped && pipes_done) {
        if (c.out >= 0) ::close(c.out);
        if (c.err >= 0) ::close(c.err);
        out[c.index] = finish(c, timeout_s);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        continue;
      }
      ++k;
    }
  }
  return out;
}

namespace {

int g_fd = -1;

void write_all(const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(g_fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// What the probe's answer depends on, written as it is learnt so that a
// child that dies part-way still leaves what it had read.
struct InputLog {
  std::mutex mu;
  std::set<std::string> objects_before;  // mapped before the plugin was opened
  std::set<std::string> written;          // "<kind> <name>" already written

  void emit(char kind, const std::string& name) {
    if (kind != 'e' && volatile_path(name)) return;
    std::lock_guard<std::mutex> lock(mu);
    if (!written.insert(std::string(1, kind) + " " + name).second) return;
    const std::string line = kind == 'e' ? env_input(name) : kind == 'd' ? dir_input(name) : file_input(name);
    write_all(format_probe_input(line));
  }
  // The shared objects mapped since the start (the plugin, its drivers).
  void objects() {
    for (const std::string& o : loaded_objects()) {
      if (!objects_before.count(o)) emit('f', o);
    }
  }
};

InputLog* g_inputs = nullptr;

void note_input(char kind, const char* name) {
  if (g_inputs) g_inputs->emit(kind, name);
}

void report_step(const char* step) {
  if (g_inputs) g_inputs->objects();
  write_all(format_probe_step(step));
}

}  // namespace

int probe_child_main(int argc, char** argv, const ProbeWatch& watch) {
  if (argc != 4 || std::strcmp(argv[1], "--fd") != 0) {
    std::fprintf(stderr, "usage: loom-probe --fd N <plugin file>\n"
                         "Loads one loom plugin file and reports what it found on fd N. Run by libloom,\n"
                         "not by people: a plugin that crashes here cannot take the host down.\n");
    return 2;
  }
  g_fd = std::atoi(argv[2]);
  const std::string path = argv[3];
  Candidate c;
  c.path = path;
  if (!parse_plugin_file_name(std::filesystem::path(path).filename().string(), &c.plugin, &c.variant)) {
    c.plugin = std::filesystem::path(path).stem().string();
  }
  static InputLog inputs;  // never destroyed: the child leaves by _exit
  for (const std::string& o : loaded_objects()) inputs.objects_before.insert(o);
  for (const std::string& line : base_inputs()) write_all(format_probe_input(line));
  g_inputs = &inputs;
  // The host's own settings (LOOM_LOG) are read before watching: they do
  // not change what the plugin finds.
  (void)log_enabled(LogLevel::kDebug, "registry");
  if (watch.start) watch.start(note_input);
  report_step("start");
  set_step_hook(report_step);
  ProbeRecord r;
  NegotiatedPlugin n;
  if (negotiate_candidate(c, 0, &n)) {
    if (c.score == 0) {
      c.fate = Fate::kSkipped;  // never run a variant's code past a score of 0
      c.reason = "cannot run here (score 0)";
      discard_plugin(c, n);
    } else {
      std::vector<ListedDevice> devices;
      std::shared_ptr<PluginHandle> handle = start_plugin(c, n, &devices);
      for (const auto& d : devices) r.devices.push_back(d.info.name);
      if (handle) {
        report_step("shutdown");
        handle->request_shutdown();
      }
    }
  }
  inputs.objects();
  r.finished = true;
  record_outcome(c, &r);
  write_all(format_probe_record(r));
  std::fflush(nullptr);
  ::_exit(0);  // no static destructors of whatever was loaded
}

}  // namespace loom::registry
