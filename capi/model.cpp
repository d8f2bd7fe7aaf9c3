// The C API's model: load with progress, tokenizer queries, tokenize,
// detokenize.
#include <cstring>

#include "capi/handles.hpp"
#include "llm/model/model_open.hpp"

namespace loom::capi {
namespace {

// *out_n = n; copy when it fits. tokens NULL with capacity 0 asks the count.
template <typename T>
loom_status_t* copy_out(const char* function, const T* src, size_t n, T* dst, size_t capacity, size_t* out_n,
                        const char* unit) {
  *out_n = n;
  if (dst == nullptr && capacity == 0) return nullptr;
  if (dst == nullptr) return bad_argument(function, std::string("the buffer is NULL with capacity ") + std::to_string(capacity));
  if (capacity < n) {
    return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED, std::string("[") + function + "] the buffer holds " +
                                                          std::to_string(capacity) + " " + unit + ", the result needs " +
                                                          std::to_string(n));
  }
  if (n > 0) std::memcpy(dst, src, n * sizeof(T));
  return nullptr;
}

const llm::Tokenizer& tokenizer(const loom_model_t* m) { return *m->state->model->tokenizer(); }

}  // namespace
}  // namespace loom::capi

using namespace loom;
using namespace loom::capi;

extern "C" {

void loom_model_params_init(loom_model_params_t* params) {
  if (params == nullptr) return;
  *params = loom_model_params_t{};
  params->struct_size = sizeof *params;
}

loom_status_t* loom_model_load(const loom_devices_t* devices, const char* path, const loom_model_params_t* params,
                               loom_model_t** out_model) {
  static const char kFn[] = "loom_model_load";
  return guard(kFn, [&]() -> loom_status_t* {
    if (devices == nullptr) return bad_argument(kFn, "devices is NULL (make a list with loom_devices_select)");
    if (path == nullptr || *path == '\0') return bad_argument(kFn, "path is NULL or empty");
    if (out_model == nullptr) return bad_argument(kFn, "out_model is NULL");
    loom_model_params_t p;
    loom_model_params_init(&p);
    if (params != nullptr) {
      if (params->struct_size < LOOM_STRUCT_END(loom_model_params_t, progress_user_data)) {
        return bad_argument(kFn, "params->struct_size " + std::to_string(params->struct_size) +
                                     " is too small (call loom_model_params_init)");
      }
      read_params(params, &p);
    }
    if (p.n_threads < 0 || p.n_threads > 1024) {
      return bad_argument(kFn, "n_threads " + std::to_string(p.n_threads) + " must be in [0, 1024]");
    }
    if (p.n_threads > 0) {
      Status st = llm::set_device_threads(devices->list, p.n_threads);
      if (!st.ok()) return to_c(st.with_context(kFn));
    }
    llm::LoadOptions lo;
    lo.devices = devices->list;
    lo.n_gpu_layers = p.n_gpu_layers;  // < 0: the load's automatic fit, as `loom run` without -ngl
    uint64_t last_total = 0;
    bool finished = false;
    if (p.progress != nullptr) {
      lo.progress = [&](size_t done, size_t total, const std::string& device) {
        last_total = total;
        finished = done >= total;
        p.progress(done, total, device.c_str(), p.progress_user_data);
      };
    }
    auto model = llm::load_text_model(path, lo);
    if (!model.ok()) return to_c(model.status());
    // The promised last call: weights read in place count as done at once.
    if (p.progress != nullptr && !finished) {
      const uint64_t total = last_total ? last_total : (*model)->weights_bytes();
      p.progress(total, total, (*model)->device()->name().c_str(), p.progress_user_data);
    }
    auto state = std::make_shared<ModelState>();
    state->reg = devices->reg;
    state->model = std::move(model).value();
    auto h = std::make_unique<loom_model>();
    h->state = std::move(state);
    *out_model = h.release();
    return nullptr;
  });
}

void loom_model_free(loom_model_t* model) {
  guard_value(0, [&] {
    delete model;
    return 0;
  });
}

int32_t loom_model_n_vocab(const loom_model_t* model) {
  return model ? static_cast<int32_t>(model->state->model->hparams().n_vocab) : 0;
}

int32_t loom_model_n_ctx_train(const loom_model_t* model) {
  return model ? static_cast<int32_t>(model->state->model->hparams().n_ctx_train) : 0;
}

const char* loom_model_architecture(const loom_model_t* model) {
  return model ? model->state->model->architecture().c_str() : "";
}

int32_t loom_model_token_bos(const loom_model_t* model) {
  return model ? tokenizer(model).special().bos : -1;
}

bool loom_model_token_is_eog(const loom_model_t* model, int32_t token) {
  if (model == nullptr || token < 0 || token >= tokenizer(model).n_vocab()) return false;
  return guard_value(false, [&] { return tokenizer(model).is_eog(token); });
}

loom_status_t* loom_model_tokenize(const loom_model_t* model, const char* text, size_t length, uint32_t flags,
                                   int32_t* tokens, size_t capacity, size_t* out_n_tokens) {
  static const char kFn[] = "loom_model_tokenize";
  return guard(kFn, [&]() -> loom_status_t* {
    if (model == nullptr) return bad_argument(kFn, "model is NULL");
    if (text == nullptr && length > 0) return bad_argument(kFn, "text is NULL with length " + std::to_string(length));
    if (out_n_tokens == nullptr) return bad_argument(kFn, "out_n_tokens is NULL");
    if (flags & ~(LOOM_TOKENIZE_ADD_SPECIAL | LOOM_TOKENIZE_PARSE_SPECIAL)) {
      return bad_argument(kFn, "unknown flags " + std::to_string(flags));
    }
    const std::string_view sv(text ? text : "", length);
    const bool parse_special = (flags & LOOM_TOKENIZE_PARSE_SPECIAL) != 0;
    const std::vector<llm::TokenId> ids = (flags & LOOM_TOKENIZE_ADD_SPECIAL)
                                              ? tokenizer(model).encode_prompt(sv, parse_special)
                                              : tokenizer(model).encode(sv, false, parse_special);
    return copy_out(kFn, ids.data(), ids.size(), tokens, capacity, out_n_tokens, "tokens");
  });
}

loom_status_t* loom_model_token_to_piece(const loom_model_t* model, int32_t token, char* buf, size_t capacity,
                                         size_t* out_length) {
  static const char kFn[] = "loom_model_token_to_piece";
  return guard(kFn, [&]() -> loom_status_t* {
    if (model == nullptr) return bad_argument(kFn, "model is NULL");
    if (out_length == nullptr) return bad_argument(kFn, "out_length is NULL");
    auto piece = tokenizer(model).token_to_piece(token);
    if (!piece.ok()) return to_c(piece.status().with_context(kFn));
    return copy_out(kFn, piece->data(), piece->size(), buf, capacity, out_length, "bytes");
  });
}

loom_status_t* loom_model_detokenize(const loom_model_t* model, const int32_t* tokens, size_t n_tokens, char* buf,
                                     size_t capacity, size_t* out_length) {
  static const char kFn[] = "loom_model_detokenize";
  return guard(kFn, [&]() -> loom_status_t* {
    if (model == nullptr) return bad_argument(kFn, "model is NULL");
    if (tokens == nullptr && n_tokens > 0) return bad_argument(kFn, "tokens is NULL with n_tokens " + std::to_string(n_tokens));
    if (out_length == nullptr) return bad_argument(kFn, "out_length is NULL");
    const std::vector<llm::TokenId> ids(tokens, tokens + n_tokens);
    auto text = tokenizer(model).decode(ids);
    if (!text.ok()) return to_c(text.status().with_context(kFn));
    return copy_out(kFn, text->data(), text->size(), buf, capacity, out_length, "bytes");
  });
}

}  // extern "C"
