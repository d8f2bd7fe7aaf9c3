// The C API's session (decode, logits), sampler and the streaming generate
// helper, which runs llm::generate as `loom run` does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "capi/handles.hpp"
#include "llm/session/generate.hpp"

namespace loom::capi {
namespace {

const llm::Tokenizer& tokenizer(const ModelState& m) { return *m.model->tokenizer(); }

llm::SamplerOptions sampler_options(float temperature, int32_t top_k, float top_p, uint32_t seed) {
  llm::SamplerOptions o;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.seed = seed;
  return o;
}

// Sampler::create checks top_p and NaN; a negative temperature is refused
// here too (the CLI's --temp takes >= 0).
Status check_temperature(float t) {
  if (!(t >= 0.0f)) return invalid_argument("temperature " + std::to_string(t) + " must be a number >= 0 (0: greedy)");
  return Status();
}

int32_t stop_reason(const llm::GenerateResult& r) {
  if (r.stopped_by_caller) return LOOM_STOP_CALLER;
  if (r.stopped_at_eos) return LOOM_STOP_EOG;
  if (r.stopped_at_context) return LOOM_STOP_CONTEXT;
  return LOOM_STOP_LENGTH;
}

void write_result(const llm::GenerateResult& r, loom_generate_result_t* out) {
  loom_generate_result_t full{};
  full.struct_size = out->struct_size;
  full.n_prompt_tokens = static_cast<int32_t>(r.prompt_tokens.size());
  full.n_generated = static_cast<int32_t>(r.generated_tokens.size());
  full.stop = stop_reason(r);
  full.prompt_tokens_per_s = r.prompt_tokens_per_s();
  full.gen_tokens_per_s = r.gen_tokens_per_s();
  std::memcpy(out, &full, std::min(out->struct_size, sizeof full));
}

}  // namespace
}  // namespace loom::capi

using namespace loom;
using namespace loom::capi;

extern "C" {

void loom_session_params_init(loom_session_params_t* params) {
  if (params == nullptr) return;
  const llm::SessionOptions d;
  *params = loom_session_params_t{};
  params->struct_size = sizeof *params;
  params->n_ctx = 0;
  params->n_batch = static_cast<int32_t>(d.n_batch);
  params->kv_type = d.kv_type == LOOM_TYPE_F32 ? LOOM_KV_TYPE_F32 : d.kv_type == LOOM_TYPE_Q8_0 ? LOOM_KV_TYPE_Q8_0 : LOOM_KV_TYPE_F16;
  params->n_seq = d.n_seq;
}

loom_status_t* loom_session_create(loom_model_t* model, const loom_session_params_t* params,
                                   loom_session_t** out_session) {
  static const char kFn[] = "loom_session_create";
  return guard(kFn, [&]() -> loom_status_t* {
    if (model == nullptr) return bad_argument(kFn, "model is NULL");
    if (out_session == nullptr) return bad_argument(kFn, "out_session is NULL");
    loom_session_params_t p;
    loom_session_params_init(&p);
    if (params != nullptr) {
      if (params->struct_size < LOOM_STRUCT_END(loom_session_params_t, kv_type)) {
        return bad_argument(kFn, "params->struct_size " + std::to_string(params->struct_size) +
                                     " is too small (call loom_session_params_init)");
      }
      read_params(params, &p);
    }
    if (p.n_ctx < 0) return bad_argument(kFn, "n_ctx " + std::to_string(p.n_ctx) + " must be >= 0 (0: the model's)");
    if (p.n_batch < 1) return bad_argument(kFn, "n_batch " + std::to_string(p.n_batch) + " must be >= 1");
    if (p.n_seq < 1 || p.n_seq > 4096) return bad_argument(kFn, "n_seq " + std::to_string(p.n_seq) + " must be in [1, 4096]");
    if (p.kv_type != LOOM_KV_TYPE_F16 && p.kv_type != LOOM_KV_TYPE_F32 && p.kv_type != LOOM_KV_TYPE_Q8_0) {
      return bad_argument(kFn, "kv_type " + std::to_string(static_cast<int>(p.kv_type)) +
                                   " is not LOOM_KV_TYPE_F16, LOOM_KV_TYPE_F32 or LOOM_KV_TYPE_Q8_0");
    }
    if (model->state->session_alive) {
      return make_status(LOOM_STATUS_UNIMPLEMENTED,
                         std::string("[") + kFn + "] the model already has a live session (one per model; free it first)");
    }
    llm::SessionOptions so;
    so.n_ctx = p.n_ctx;
    so.n_batch = p.n_batch;
    so.kv_type = p.kv_type == LOOM_KV_TYPE_F32 ? LOOM_TYPE_F32 : p.kv_type == LOOM_KV_TYPE_Q8_0 ? LOOM_TYPE_Q8_0 : LOOM_TYPE_F16;
    so.n_seq = p.n_seq;
    auto s = llm::LlamaSession::create(model->state->model.get(), so);
    if (!s.ok()) return to_c(s.status());
    auto h = std::make_unique<loom_session>();
    h->model = model->state;
    h->session = std::move(s).value();
    h->model->session_alive = true;
    *out_session = h.release();
    return nullptr;
  });
}

void loom_session_free(loom_session_t* session) {
  guard_value(0, [&] {
    delete session;
    return 0;
  });
}

loom_status_t* loom_session_decode(loom_session_t* session, const int32_t* tokens, size_t n_tokens) {
  static const char kFn[] = "loom_session_decode";
  return guard(kFn, [&]() -> loom_status_t* {
    if (session == nullptr) return bad_argument(kFn, "session is NULL");
    if (tokens == nullptr || n_tokens == 0) return bad_argument(kFn, "no tokens to decode (tokens NULL or n_tokens 0)");
    const std::vector<llm::TokenId> ids(tokens, tokens + n_tokens);
    session->has_logits = false;
    Status st = session->session->eval(ids, false, &session->logits);
    if (!st.ok()) return to_c(st.with_context(kFn));
    session->has_logits = true;
    return nullptr;
  });
}

loom_status_t* loom_session_logits(const loom_session_t* session, const float** out_logits, size_t* out_n_vocab) {
  static const char kFn[] = "loom_session_logits";
  return guard(kFn, [&]() -> loom_status_t* {
    if (session == nullptr) return bad_argument(kFn, "session is NULL");
    if (out_logits == nullptr || out_n_vocab == nullptr) return bad_argument(kFn, "out_logits or out_n_vocab is NULL");
    if (!session->has_logits) return bad_argument(kFn, "no logits: decode tokens first");
    *out_logits = session->logits.data();
    *out_n_vocab = session->logits.size();
    return nullptr;
  });
}

loom_status_t* loom_session_decode_batch(loom_session_t* session, const loom_batch_token_t* batch, size_t n_tokens,
                                         const float** out_logits, size_t* out_rows) {
  static const char kFn[] = "loom_session_decode_batch";
  return guard(kFn, [&]() -> loom_status_t* {
    if (session == nullptr) return bad_argument(kFn, "session is NULL");
    if (batch == nullptr || n_tokens == 0) return bad_argument(kFn, "no tokens to decode (batch NULL or n_tokens 0)");
    if (out_logits == nullptr || out_rows == nullptr) return bad_argument(kFn, "out_logits or out_rows is NULL");
    std::vector<llm::SeqToken> b(n_tokens);
    for (size_t i = 0; i < n_tokens; ++i) b[i] = {batch[i].token, batch[i].seq, batch[i].pos, batch[i].logits != 0};
    session->has_logits = false;
    Status st = session->session->eval_seqs(b, &session->logits);
    if (!st.ok()) return to_c(st.with_context(kFn));
    const auto n_vocab = static_cast<size_t>(session->session->model().hparams().n_vocab);
    *out_logits = session->logits.data();
    *out_rows = session->logits.size() / n_vocab;
    return nullptr;
  });
}

loom_status_t* loom_session_copy_seq(loom_session_t* session, int32_t src, int32_t dst, int32_t n) {
  static const char kFn[] = "loom_session_copy_seq";
  return guard(kFn, [&]() -> loom_status_t* {
    if (session == nullptr) return bad_argument(kFn, "session is NULL");
    Status st = session->session->copy_seq(src, dst, n);
    return st.ok() ? nullptr : to_c(st.with_context(kFn));
  });
}

int32_t loom_session_n_seq(const loom_session_t* session) { return session ? session->session->n_seq() : 0; }

void loom_session_reset(loom_session_t* session) {
  if (session == nullptr) return;
  session->session->reset();
  session->has_logits = false;
}

int32_t loom_session_n_past(const loom_session_t* session) {
  return session ? static_cast<int32_t>(session->session->n_past()) : 0;
}

int32_t loom_session_n_ctx(const loom_session_t* session) {
  return session ? static_cast<int32_t>(session->session->n_ctx()) : 0;
}

void loom_sampler_params_init(loom_sampler_params_t* params) {
  if (params == nullptr) return;
  const llm::SamplerOptions d;
  *params = loom_sampler_params_t{};
  params->struct_size = sizeof *params;
  params->temperature = d.temperature;
  params->top_k = d.top_k;
  params->top_p = d.top_p;
  params->seed = d.seed;
}

loom_status_t* loom_sampler_create(const loom_sampler_params_t* params, loom_sampler_t** out_sampler) {
  static const char kFn[] = "loom_sampler_create";
  return guard(kFn, [&]() -> loom_status_t* {
    if (out_sampler == nullptr) return bad_argument(kFn, "out_sampler is NULL");
    loom_sampler_params_t p;
    loom_sampler_params_init(&p);
    if (params != nullptr) {
      if (params->struct_size < LOOM_STRUCT_END(loom_sampler_params_t, seed)) {
        return bad_argument(kFn, "params->struct_size " + std::to_string(params->struct_size) +
                                     " is too small (call loom_sampler_params_init)");
      }
      read_params(params, &p);
    }
    Status st = check_temperature(p.temperature);
    if (!st.ok()) return to_c(st.with_context(kFn));
    auto s = llm::Sampler::create(sampler_options(p.temperature, p.top_k, p.top_p, p.seed));
    if (!s.ok()) return to_c(s.status().with_context(kFn));
    *out_sampler = new loom_sampler{std::move(s).value()};
    return nullptr;
  });
}

void loom_sampler_free(loom_sampler_t* sampler) { delete sampler; }

loom_status_t* loom_session_sample(const loom_session_t* session, loom_sampler_t* sampler, int32_t* out_token) {
  static const char kFn[] = "loom_session_sample";
  return guard(kFn, [&]() -> loom_status_t* {
    if (session == nullptr) return bad_argument(kFn, "session is NULL");
    if (sampler == nullptr) return bad_argument(kFn, "sampler is NULL");
    if (out_token == nullptr) return bad_argument(kFn, "out_token is NULL");
    if (!session->has_logits) return bad_argument(kFn, "no logits: decode tokens first");
    *out_token = sampler->sampler.sample(session->logits.data(), static_cast<int32_t>(session->logits.size()));
    return nullptr;
  });
}

void loom_generate_params_init(loom_generate_params_t* params) {
  if (params == nullptr) return;
  const llm::GenerateOptions d;
  *params = loom_generate_params_t{};
  params->struct_size = sizeof *params;
  params->n_predict = d.n_predict;
  params->temperature = d.sampling.temperature;
  params->top_k = d.sampling.top_k;
  params->top_p = d.sampling.top_p;
  params->seed = d.sampling.seed;
}

void loom_generate_result_init(loom_generate_result_t* result) {
  if (result == nullptr) return;
  *result = loom_generate_result_t{};
  result->struct_size = sizeof *result;
}

loom_status_t* loom_session_generate(loom_session_t* session, const char* prompt, const loom_generate_params_t* params,
                                     loom_generate_result_t* out_result) {
  static const char kFn[] = "loom_session_generate";
  return guard(kFn, [&]() -> loom_status_t* {
    if (session == nullptr) return bad_argument(kFn, "session is NULL");
    if (prompt == nullptr) return bad_argument(kFn, "prompt is NULL (\"\" starts from BOS)");
    if (out_result != nullptr && out_result->struct_size < sizeof(size_t)) {
      return bad_argument(kFn, "out_result->struct_size is 0 (call loom_generate_result_init)");
    }
    loom_generate_params_t p;
    loom_generate_params_init(&p);
    if (params != nullptr) {
      if (params->struct_size < LOOM_STRUCT_END(loom_generate_params_t, user_data)) {
        return bad_argument(kFn, "params->struct_size " + std::to_string(params->struct_size) +
                                     " is too small (call loom_generate_params_init)");
      }
      read_params(params, &p);
    }
    Status st = check_temperature(p.temperature);
    if (!st.ok()) return to_c(st.with_context(kFn));
    llm::GenerateOptions go;
    go.n_predict = p.n_predict;
    go.sampling = sampler_options(p.temperature, p.top_k, p.top_p, p.seed);
    std::function<bool(const std::string&)> on_text;
    if (p.on_piece != nullptr) {
      on_text = [&p](const std::string& piece) { return p.on_piece(piece.data(), piece.size(), p.user_data); };
    }
    session->has_logits = false;
    auto r = llm::generate(*session->session, tokenizer(*session->model), prompt, go, on_text);
    if (!r.ok()) return to_c(r.status());
    if (out_result != nullptr) write_result(*r, out_result);
    return nullptr;
  });
}

}  // extern "C"
