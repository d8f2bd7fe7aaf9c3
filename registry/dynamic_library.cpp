#include "registry/dynamic_library.hpp"

#include <dlfcn.h>

#include <utility>

namespace loom::registry {
namespace {

std::string last_dl_error(const char* fallback) {
  const char* e = dlerror();
  return e ? std::string(e) : std::string(fallback);
}

}  // namespace

DynamicLibrary::DynamicLibrary(DynamicLibrary&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)), path_(std::move(o.path_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& o) noexcept {
  if (this != &o) {
    // Moving over an open library would lose its handle: keep it loaded
    // rather than unload implicitly (callers close explicitly).
    handle_ = std::exchange(o.handle_, nullptr);
    path_ = std::move(o.path_);
  }
  return *this;
}

bool DynamicLibrary::open(const std::string& path, std::string* error) {
  dlerror();  // clear a stale error from an earlier call on this thread
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    if (error) *error = last_dl_error("dlopen failed without a message");
    return false;
  }
  handle_ = h;
  path_ = path;
  return true;
}

void* DynamicLibrary::symbol(const char* name, std::string* error) const {
  if (!handle_) {
    if (error) *error = "library is not open";
    return nullptr;
  }
  dlerror();
  void* sym = dlsym(handle_, name);
  if (!sym && error) *error = last_dl_error("symbol resolved to NULL");
  return sym;
}

bool DynamicLibrary::close(std::string* error) {
  if (!handle_) return true;
  void* h = std::exchange(handle_, nullptr);
  dlerror();
  if (dlclose(h) != 0) {
    if (error) *error = last_dl_error("dlclose failed without a message");
    return false;
  }
  return true;
}

}  // namespace loom::registry
