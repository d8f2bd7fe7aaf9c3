// Evaluation state of one llama model on one device: the KV cache, the
// executor and the current position. eval() runs tokens through the model
// in batches and returns logits.
//
// One session per model at a time: the session marks the model's Context
// after its cache tensors and rolls back to that mark after every step.
// The model and device must outlive the session. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "llm/kv_cache.hpp"
#include "llm/llama_model.hpp"
#include "llm/tokenizer.hpp"
#include "loom/executor.hpp"

namespace loom::llm {

struct SessionOptions {
  int64_t n_ctx = 0;   // 0: the model's training context
  int64_t n_batch = 32;  // tokens per forward graph during prompt processing
  loom_type_t kv_type = LOOM_TYPE_F32;
};

class LlamaSession {
 public:
  static StatusOr<std::unique_ptr<LlamaSession>> create(LlamaModel* model, const SessionOptions& options);
  ~LlamaSession();
  LlamaSession(const LlamaSession&) = delete;
  LlamaSession& operator=(const LlamaSession&) = delete;

  // Feed tokens at positions [n_past, n_past + n), in batches of n_batch.
  // logits gets n_vocab floats per token when all_logits, else those of
  // the last token only. A batch past the context is an error naming both
  // numbers; nothing is evaluated then.
  Status eval(const std::vector<TokenId>& tokens, bool all_logits, std::vector<float>* logits);
  // Forget the cached positions (start a new sequence).
  void reset() { n_past_ = 0; }

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return cache_.n_ctx(); }
  int64_t n_batch() const { return n_batch_; }
  const LlamaModel& model() const { return *model_; }
  size_t compute_buffer_size() const { return executor_->compute_buffer_size(); }

 private:
  LlamaSession(LlamaModel* model, KvCache cache, std::unique_ptr<Executor> ex, int64_t n_batch, size_t mark)
      : model_(model), cache_(std::move(cache)), executor_(std::move(ex)), n_batch_(n_batch), mark_(mark) {}
  Status eval_batch(const TokenId* tokens, int64_t n, bool all_logits, float* out);

  LlamaModel* model_;
  KvCache cache_;
  std::unique_ptr<Executor> executor_;
  int64_t n_batch_;
  size_t mark_;  // the model's Context size after the cache tensors
  int64_t n_past_ = 0;
};

}  // namespace loom::llm
