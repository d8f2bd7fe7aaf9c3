// What stands behind the opaque handles of include/loom/loom.h, and the
// boundary helpers every entry point uses: statuses for the caller and the
// guard that turns any C++ exception into one. Internal to libloom.
//
// Ownership: a handle holds shared references to what it was made from
// (devices -> registry, model -> registry, session -> model), so the
// application may release handles in any order; the C++ objects go when the
// last reference does, the model before its registry's plugins.
#pragma once

#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/llama_session.hpp"
#include "llm/session/sampling.hpp"
#include "loom/loom.h"
#include "loom/registry/registry.hpp"
#include "loom/runtime/status.hpp"
#include "runtime/status_abi.hpp"

struct loom_registry {
  std::shared_ptr<loom::registry::Registry> reg;
  std::vector<loom_plugin_record_t> plugins;  // strings point into reg's candidates
  std::vector<loom_device_info_t> devices;    // strings point into reg's devices
};

struct loom_devices {
  std::shared_ptr<loom::registry::Registry> reg;
  std::vector<loom::registry::Device*> list;
  std::vector<loom_device_info_t> infos;
};

namespace loom::capi {

// A loaded model and what it needs alive: members go in reverse order, so
// the model is destroyed before the registry reference.
struct ModelState {
  std::shared_ptr<registry::Registry> reg;
  std::unique_ptr<llm::LlamaModel> model;
  bool session_alive = false;  // LlamaSession: one per model at a time
};

}  // namespace loom::capi

struct loom_model {
  std::shared_ptr<loom::capi::ModelState> state;
};

struct loom_session {
  std::shared_ptr<loom::capi::ModelState> model;
  std::unique_ptr<loom::llm::LlamaSession> session;
  std::vector<float> logits;  // of the last token decoded
  bool has_logits = false;
  ~loom_session() {
    session.reset();
    if (model) model->session_alive = false;
  }
};

struct loom_sampler {
  loom::llm::Sampler sampler;
};

namespace loom::capi {

// A status for the caller (never NULL: out of memory gives a static one
// that loom_status_free leaves alone).
loom_status_t* make_status(loom_status_code_t code, const std::string& message);
// NULL for OK.
loom_status_t* to_c(const Status& st);
// "[function] what" as INVALID_ARGUMENT.
loom_status_t* bad_argument(const char* function, const std::string& what);
// Whether a status is the static out-of-memory one.
bool is_static_status(const loom_status_t* st);

loom_status_t* from_exception(const char* function, std::exception_ptr e) noexcept;

// Run f (returns loom_status_t*) with every exception caught.
template <typename F>
loom_status_t* guard(const char* function, F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return from_exception(function, std::current_exception());
  }
}

// Run f (returns T) with every exception caught; fallback on one.
template <typename T, typename F>
T guard_value(T fallback, F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return fallback;
  }
}

// The C record of a device (strings point into d's info).
loom_device_info_t device_record(const registry::Device& d);

// The caller's parameter struct over the defaults in *out (made by its
// *_init): only the bytes within the caller's struct_size are read, so a
// struct from an older header is never read past its end.
template <typename T>
void read_params(const T* in, T* out) {
  const size_t n = in->struct_size < sizeof(T) ? in->struct_size : sizeof(T);
  std::memcpy(static_cast<void*>(out), in, n);
  out->struct_size = sizeof(T);
}

// Fields of a caller-sized struct that fit in its struct_size.
#define LOOM_CAPI_HAS_FIELD(ptr, type, field) ((ptr)->struct_size >= LOOM_STRUCT_END(type, field))

}  // namespace loom::capi
