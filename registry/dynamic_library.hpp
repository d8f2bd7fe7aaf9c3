// A thin owner of a dlopen handle: open, look up symbols, close. Errors carry
// dlerror()'s text verbatim (it names the missing library). Internal to
// libloom. Not thread-safe per object; dlerror itself is thread-local.
#pragma once

#include <string>

namespace loom::registry {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  // Closes nothing: unloading is explicit (close()), never a side effect of
  // destruction, so a library is never unloaded from a static destructor.
  ~DynamicLibrary() = default;
  DynamicLibrary(DynamicLibrary&& o) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& o) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  // dlopen(path, RTLD_NOW | RTLD_LOCAL). On failure returns false and sets
  // *error to dlerror()'s text.
  bool open(const std::string& path, std::string* error);
  // The address of `name`, or nullptr with *error set (dlerror's text).
  void* symbol(const char* name, std::string* error) const;
  // dlclose; returns false with *error set when dlclose reports a failure.
  bool close(std::string* error = nullptr);
  bool is_open() const { return handle_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace loom::registry
