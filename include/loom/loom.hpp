// loom C++ API for applications: header-only RAII classes over the C API
// (include/loom/loom.h), so a C++ program gets the C API's stable ABI with
// C++ ergonomics. docs/embedding.md shows both.
//
// Errors: a failing call throws loom::api::Error (code + the C API's
// message). The exception is thrown and caught in the application's own
// code: nothing C++ crosses into libloom.
//
// Ownership and lifetime: every class owns one C handle, is movable and not
// copyable. As in the C API, an object keeps what it was made from alive
// (a Model its plugins, a Session its model), so destruction order is free.
// Strings and records returned by reference live as long as the object that
// returned them. Thread-safety: as loom.h (one object, one thread at a time).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/loom.h"

namespace loom::api {

// A failed C API call.
class Error : public std::runtime_error {
 public:
  Error(loom_status_code_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  loom_status_code_t code() const { return code_; }

 private:
  loom_status_code_t code_;
};

namespace detail {

// Takes ownership of st; throws when it is an error.
inline void check(loom_status_t* st) {
  if (st == nullptr) return;
  const loom_status_code_t code = loom_status_code(st);
  std::string message = loom_status_message(st);
  loom_status_free(st);
  throw Error(code, message);
}

// A move-only owner of one C handle released by Free.
template <typename T, void (*Free)(T*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T* h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      Free(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { Free(h_); }
  T* get() const { return h_; }

 private:
  T* h_ = nullptr;
};

}  // namespace detail

// The plugins and devices of this machine (loom_registry_*).
class Registry {
 public:
  // plugin_paths: searched first. devices: the device list the application
  // will select, so plugins serving none of them are not loaded ("" = all).
  static Registry open(const std::vector<std::string>& plugin_paths = {}, const std::string& devices = "") {
    std::vector<const char*> paths;
    for (const std::string& p : plugin_paths) paths.push_back(p.c_str());
    loom_registry_options_t o;
    loom_registry_options_init(&o);
    o.plugin_paths = paths.data();
    o.n_plugin_paths = paths.size();
    o.devices = devices.empty() ? nullptr : devices.c_str();
    loom_registry_t* r = nullptr;
    detail::check(loom_registry_open(&o, &r));
    return Registry(r);
  }
  // Every plugin file found, with its state and reason.
  std::vector<loom_plugin_record_t> plugins() const {
    std::vector<loom_plugin_record_t> v;
    for (size_t i = 0; i < loom_registry_plugin_count(get()); ++i) v.push_back(*loom_registry_plugin(get(), i));
    return v;
  }
  // The devices of the ready plugins.
  std::vector<loom_device_info_t> devices() const {
    std::vector<loom_device_info_t> v;
    for (size_t i = 0; i < loom_registry_device_count(get()); ++i) v.push_back(*loom_registry_device(get(), i));
    return v;
  }
  std::vector<std::string> warnings() const {
    std::vector<std::string> v;
    for (size_t i = 0; i < loom_registry_warning_count(get()); ++i) v.emplace_back(loom_registry_warning(get(), i));
    return v;
  }
  loom_registry_t* get() const { return h_.get(); }

 private:
  explicit Registry(loom_registry_t* r) : h_(r) {}
  detail::Handle<loom_registry_t, loom_registry_close> h_;
};

// An ordered device list (loom_devices_select): names ("vulkan0,cpu"), a
// policy ("auto", "gpu-first", "cpu-only"), or "" for LOOM_DEVICES, else cpu.
class Devices {
 public:
  static Devices select(const Registry& registry, const std::string& spec = "") {
    loom_devices_t* d = nullptr;
    detail::check(loom_devices_select(registry.get(), spec.empty() ? nullptr : spec.c_str(), &d));
    return Devices(d);
  }
  size_t size() const { return loom_devices_count(get()); }
  const loom_device_info_t& operator[](size_t i) const {
    const loom_device_info_t* info = loom_devices_get(get(), i);
    if (info == nullptr) throw Error(LOOM_STATUS_INVALID_ARGUMENT, "[loom::api::Devices] index out of range");
    return *info;
  }
  // "vulkan0,cpu"
  std::string names() const {
    std::string s;
    for (size_t i = 0; i < size(); ++i) s += (i ? "," : "") + std::string((*this)[i].name);
    return s;
  }
  loom_devices_t* get() const { return h_.get(); }

 private:
  explicit Devices(loom_devices_t* d) : h_(d) {}
  detail::Handle<loom_devices_t, loom_devices_free> h_;
};

struct ModelOptions {
  int32_t n_gpu_layers = 0;
  int32_t n_threads = 0;  // 0: each device's default
  // (bytes done, bytes total, device); may be empty.
  std::function<void(uint64_t, uint64_t, const char*)> progress;
};

// A GGUF model placed on a device list, with its tokenizer (loom_model_*).
class Model {
 public:
  static Model load(const Devices& devices, const std::string& path, const ModelOptions& options = {}) {
    loom_model_params_t p;
    loom_model_params_init(&p);
    p.n_gpu_layers = options.n_gpu_layers;
    p.n_threads = options.n_threads;
    // An exception from progress is kept and rethrown after the load (it
    // never unwinds through libloom).
    struct Call {
      const std::function<void(uint64_t, uint64_t, const char*)>* fn;
      std::exception_ptr error;
    } call{&options.progress, nullptr};
    if (options.progress) {
      p.progress = [](uint64_t done, uint64_t total, const char* device, void* user) {
        auto* c = static_cast<Call*>(user);
        if (c->error) return;
        try {
          (*c->fn)(done, total, device);
        } catch (...) {
          c->error = std::current_exception();
        }
      };
      p.progress_user_data = &call;
    }
    loom_model_t* m = nullptr;
    detail::check(loom_model_load(devices.get(), path.c_str(), &p, &m));
    Model model(m);
    if (call.error) std::rethrow_exception(call.error);
    return model;
  }
  int32_t n_vocab() const { return loom_model_n_vocab(get()); }
  int32_t n_ctx_train() const { return loom_model_n_ctx_train(get()); }
  std::string architecture() const { return loom_model_architecture(get()); }
  int32_t token_bos() const { return loom_model_token_bos(get()); }
  bool is_eog(int32_t token) const { return loom_model_token_is_eog(get(), token); }
  // add_special: BOS/EOS as the model asks; parse_special: <|...|> text -> ids.
  std::vector<int32_t> tokenize(std::string_view text, bool add_special = true, bool parse_special = true) const {
    const uint32_t flags = (add_special ? LOOM_TOKENIZE_ADD_SPECIAL : 0u) | (parse_special ? LOOM_TOKENIZE_PARSE_SPECIAL : 0u);
    size_t n = 0;
    detail::check(loom_model_tokenize(get(), text.data(), text.size(), flags, nullptr, 0, &n));
    std::vector<int32_t> ids(n);
    if (n > 0) detail::check(loom_model_tokenize(get(), text.data(), text.size(), flags, ids.data(), n, &n));
    return ids;
  }
  std::string token_to_piece(int32_t token) const {
    size_t n = 0;
    detail::check(loom_model_token_to_piece(get(), token, nullptr, 0, &n));
    std::string s(n, '\0');
    if (n > 0) detail::check(loom_model_token_to_piece(get(), token, &s[0], n, &n));
    return s;
  }
  std::string detokenize(const std::vector<int32_t>& tokens) const {
    size_t n = 0;
    detail::check(loom_model_detokenize(get(), tokens.data(), tokens.size(), nullptr, 0, &n));
    std::string s(n, '\0');
    if (n > 0) detail::check(loom_model_detokenize(get(), tokens.data(), tokens.size(), &s[0], n, &n));
    return s;
  }
  loom_model_t* get() const { return h_.get(); }

 private:
  explicit Model(loom_model_t* m) : h_(m) {}
  detail::Handle<loom_model_t, loom_model_free> h_;
};

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 40;
  float top_p = 0.95f;
  uint32_t seed = 42;
};

// Chooses tokens from a session's logits (loom_sampler_*).
class Sampler {
 public:
  explicit Sampler(const SamplerOptions& o = {}) {
    loom_sampler_params_t p;
    loom_sampler_params_init(&p);
    p.temperature = o.temperature;
    p.top_k = o.top_k;
    p.top_p = o.top_p;
    p.seed = o.seed;
    loom_sampler_t* s = nullptr;
    detail::check(loom_sampler_create(&p, &s));
    h_ = detail::Handle<loom_sampler_t, loom_sampler_free>(s);
  }
  loom_sampler_t* get() const { return h_.get(); }

 private:
  detail::Handle<loom_sampler_t, loom_sampler_free> h_;
};

struct SessionOptions {
  int32_t n_ctx = 0;  // 0: the model's training context
  int32_t n_batch = 32;
  loom_kv_type_t kv_type = LOOM_KV_TYPE_F16;
  int32_t n_seq = 1;  // sequence slots (decode_batch)
};

struct GenerateOptions {
  int32_t n_predict = 200;
  SamplerOptions sampling;
};

struct GenerateResult {
  int32_t n_prompt_tokens = 0;
  int32_t n_generated = 0;
  loom_stop_reason_t stop = LOOM_STOP_LENGTH;
  double prompt_tokens_per_s = 0;
  double gen_tokens_per_s = 0;
};

// KV cache and position over a model (loom_session_*); one per model.
class Session {
 public:
  explicit Session(const Model& model, const SessionOptions& o = {}) {
    loom_session_params_t p;
    loom_session_params_init(&p);
    p.n_ctx = o.n_ctx;
    p.n_batch = o.n_batch;
    p.kv_type = o.kv_type;
    p.n_seq = o.n_seq;
    loom_session_t* s = nullptr;
    detail::check(loom_session_create(model.get(), &p, &s));
    h_ = detail::Handle<loom_session_t, loom_session_free>(s);
  }
  // Evaluate tokens at the current position; keeps the last one's logits.
  void decode(const std::vector<int32_t>& tokens) {
    detail::check(loom_session_decode(get(), tokens.data(), tokens.size()));
  }
  // n_vocab logits of the last token decoded (valid until the next call).
  std::pair<const float*, size_t> logits() const {
    const float* l = nullptr;
    size_t n = 0;
    detail::check(loom_session_logits(get(), &l, &n));
    return {l, n};
  }
  int32_t sample(Sampler& sampler) const {
    int32_t t = -1;
    detail::check(loom_session_sample(get(), sampler.get(), &t));
    return t;
  }
  // One step over several sequences (loom_session_decode_batch): the rows
  // of logits of the tokens flagged, in batch order, n_vocab floats each
  // (valid until the next call).
  std::pair<const float*, size_t> decode_batch(const std::vector<loom_batch_token_t>& batch) {
    const float* l = nullptr;
    size_t rows = 0;
    detail::check(loom_session_decode_batch(get(), batch.data(), batch.size(), &l, &rows));
    return {l, rows};
  }
  void copy_seq(int32_t src, int32_t dst, int32_t n) { detail::check(loom_session_copy_seq(get(), src, dst, n)); }
  int32_t n_seq() const { return loom_session_n_seq(get()); }
  void reset() { loom_session_reset(get()); }
  int32_t n_past() const { return loom_session_n_past(get()); }
  int32_t n_ctx() const { return loom_session_n_ctx(get()); }
  // Stream the continuation of prompt ("" starts from BOS) to on_piece,
  // which returns false to stop (see loom_session_generate).
  GenerateResult generate(const std::string& prompt, const GenerateOptions& o,
                          const std::function<bool(std::string_view)>& on_piece = {}) {
    loom_generate_params_t p;
    loom_generate_params_init(&p);
    p.n_predict = o.n_predict;
    p.temperature = o.sampling.temperature;
    p.top_k = o.sampling.top_k;
    p.top_p = o.sampling.top_p;
    p.seed = o.sampling.seed;
    // An exception from on_piece stops the generation and is rethrown here
    // (it never unwinds through libloom).
    struct Call {
      const std::function<bool(std::string_view)>* fn;
      std::exception_ptr error;
    } call{&on_piece, nullptr};
    if (on_piece) {
      p.on_piece = [](const char* piece, size_t length, void* user) {
        auto* c = static_cast<Call*>(user);
        try {
          return (*c->fn)(std::string_view(piece, length));
        } catch (...) {
          c->error = std::current_exception();
          return false;
        }
      };
      p.user_data = &call;
    }
    loom_generate_result_t r;
    loom_generate_result_init(&r);
    detail::check(loom_session_generate(get(), prompt.c_str(), &p, &r));
    if (call.error) std::rethrow_exception(call.error);
    return {r.n_prompt_tokens, r.n_generated, static_cast<loom_stop_reason_t>(r.stop), r.prompt_tokens_per_s,
            r.gen_tokens_per_s};
  }
  loom_session_t* get() const { return h_.get(); }

 private:
  detail::Handle<loom_session_t, loom_session_free> h_;
};

}  // namespace loom::api
