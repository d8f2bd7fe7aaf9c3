// Calls into plugin code, with C++ exceptions that escape a broken plugin
// caught at the boundary. Internal to libloom.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "loom/plugin.h"
#include "loom/registry/buffer.hpp"
#include "loom/runtime/status.hpp"

namespace loom::registry {

// Run fn(); returns "" when it returned normally, else "threw an exception:
// <what>" describing what escaped.
template <typename Fn>
std::string call_plugin(Fn&& fn) noexcept {
  try {
    std::forward<Fn>(fn)();
    return std::string();
  } catch (const std::exception& e) {
    try {
      return std::string("threw an exception: ") + e.what();
    } catch (...) {
      return "threw an exception";
    }
  } catch (...) {
    return "threw an exception of unknown type";
  }
}

// Run fn() (returning loom_status_t*) and convert the result to a Status; an
// escaping exception becomes INTERNAL "[<op>] <who> threw an exception: ...".
template <typename Fn>
Status call_plugin_status(const std::string& op, const std::string& who, Fn&& fn) noexcept {
  loom_status_t* raw = nullptr;
  std::string err = call_plugin([&] { raw = std::forward<Fn>(fn)(); });
  if (!err.empty()) return internal_error("[" + op + "] " + who + ": " + err);
  return loom::status_from_abi(raw);
}

// "1.0" for a packed ABI version.
std::string abi_version_text(uint32_t version);

}  // namespace loom::registry
