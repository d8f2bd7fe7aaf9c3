// What the plugin under probe reads, seen from inside the helper: this
// executable defines getenv, secure_getenv, opendir and fopen, and the
// dynamic linker binds every library's calls (the plugin's, its driver's,
// the Vulkan loader's) to these first (ENABLE_EXPORTS). Each call does what
// libc's does and, while watching, notes the variable, folder or file, so
// the probe record can say what its answer depended on
// (registry/probe_inputs.hpp). Nothing here allocates until watching starts:
// sanitizer runtimes and static constructors call getenv before main.
// Each note goes to the sink at once (registry/probe.cpp writes it to the
// parent), so the reads of a step that crashes are not lost.
#include <dirent.h>
#include <dlfcn.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "tools/loom-probe/watch.hpp"

extern char** environ;

namespace loom::probe {
namespace {

using Sink = void (*)(char kind, const char* name);
std::atomic<Sink> g_sink{nullptr};
std::mutex g_mu;  // one note at a time, whatever thread the driver reads from
thread_local bool t_in_sink = false;

std::string absolute(const char* path) {
  if (path[0] == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

bool watching() { return g_sink.load(std::memory_order_acquire) != nullptr && !t_in_sink; }

// Handed on at once, so a plugin that then crashes still leaves it.
void note(char kind, const std::string& what) {
  std::lock_guard<std::mutex> lock(g_mu);
  t_in_sink = true;  // the sink's own reads are not the plugin's
  g_sink.load()(kind, what.c_str());
  t_in_sink = false;
}

template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

bool read_only(const char* mode) { return mode != nullptr && std::strpbrk(mode, "wa+") == nullptr; }

char* find_env(const char* name) {
  if (name == nullptr) return nullptr;
  const size_t n = std::strlen(name);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  }
  return nullptr;
}

}  // namespace

void watch_start(void (*sink)(char kind, const char* name)) { g_sink.store(sink, std::memory_order_release); }

}  // namespace loom::probe

extern "C" {

__attribute__((visibility("default"))) char* getenv(const char* name) {
  char* v = loom::probe::find_env(name);
  if (loom::probe::watching()) loom::probe::note('e', name);
  return v;
}

__attribute__((visibility("default"))) char* secure_getenv(const char* name) {
  if (getauxval(AT_SECURE) != 0) {
    if (loom::probe::watching()) loom::probe::note('e', name);
    return nullptr;
  }
  return getenv(name);
}

__attribute__((visibility("default"))) DIR* opendir(const char* path) {
  using Fn = DIR* (*)(const char*);
  static const Fn real = loom::probe::next_symbol<Fn>("opendir");
  DIR* d = real ? real(path) : nullptr;
  if (path[0] != '\0' && loom::probe::watching()) loom::probe::note('d', loom::probe::absolute(path));
  return d;
}

__attribute__((visibility("default"))) FILE* fopen(const char* path, const char* mode) {
  using Fn = FILE* (*)(const char*, const char*);
  static const Fn real = loom::probe::next_symbol<Fn>("fopen");
  FILE* f = real ? real(path, mode) : nullptr;
  if (path[0] != '\0' && loom::probe::read_only(mode) && loom::probe::watching()) {
    loom::probe::note('f', loom::probe::absolute(path));
  }
  return f;
}

__attribute__((visibility("default"))) FILE* fopen64(const char* path, const char* mode) { return fopen(path, mode); }

}  // extern "C"
