// The serving engine: many completion requests over one model at once.
// Requests wait in a bounded queue, take a free sequence slot of the
// session's KV cache as one frees up, and are stepped together: every step
// is one batch holding the next token of each decoding sequence plus a
// chunk of a prompt still being read (continuous batching, chunked prefill),
// so one step reads the weights once for all of them. A new request takes
// the idle slot whose cached tokens share the longest prefix with its
// prompt and computes only the rest (a shared system prompt is read once).
//
// The HTTP layer (tools/loom/serve) speaks to the abstract Engine, so it can
// be tested against a fake one; LlamaEngine is the real one. Thread-safe:
// submit, metrics and shutdown may be called from any thread; a Stream from
// the thread that owns it (cancel from any).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "llm/session/sampling.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "loom/runtime/status.hpp"

namespace loom::llm::serve {

struct CompletionRequest {
  std::vector<TokenId> prompt;  // as the model reads it (BOS included where the model wants one)
  int32_t max_tokens = 16;      // tokens to generate at most (>= 0; 0: none, finish_reason "length")
  SamplerOptions sampling;
  std::vector<std::string> stop;  // the text ends before the first of these (not included)
  // End-of-generation tokens are generated like any other (benchmarks:
  // every request runs to max_tokens); llama-server's ignore_eos.
  bool ignore_eos = false;
  // -1: none. 0..kMaxTopLogprobs: each generated token's log-probability
  // (CompletionEvent::logprobs) with this many of the most likely tokens.
  int32_t logprobs = -1;
};

// The most alternatives a request may ask for per token (OpenAI's
// top_logprobs limit).
constexpr int32_t kMaxTopLogprobs = 20;

// One generated token's log-probability under the model: the log-softmax of
// its logits as the model gave them (temperature 1, before top-k/top-p:
// what llama-server reports too), and the `logprobs` most likely tokens of
// the same distribution, most likely first (ties: the lower id).
struct TokenLogprob {
  TokenId token = 0;
  float logprob = 0;
  std::vector<std::pair<TokenId, float>> top;
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

// One piece of a completion as it is decided. The last event of a stream
// has done == true with the finish reason, the token counts and, for
// kError, the error; its text may be non-empty (text held back while it
// could still start a stop string).
struct CompletionEvent {
  std::string text;
  bool done = false;
  FinishReason finish = FinishReason::kNone;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens whose KV was reused, not computed
  Status error;
  // With CompletionRequest::logprobs >= 0: the generated tokens this event
  // completes, in order (text held back is sent with the tokens that made
  // it; every generated token appears once in the stream's events).
  std::vector<TokenLogprob> logprobs;
};

// The consumer's end of one request.
class Stream {
 public:
  virtual ~Stream() = default;
  // Waits up to `timeout` for the next event: true with *ev set, false on
  // timeout. After the done event, always returns false at once.
  virtual bool next(CompletionEvent* ev, std::chrono::milliseconds timeout) = 0;
  // Stop generating (a client went away): the sequence is freed at the next
  // step; a done event with FinishReason::kCancelled follows.
  virtual void cancel() = 0;
};

struct EngineMetrics {
  uint64_t requests_total = 0;      // accepted by submit
  uint64_t requests_rejected = 0;   // refused by submit (queue full, too long, shut down)
  uint64_t prompt_tokens_total = 0;     // prompt tokens computed (cached ones not counted)
  uint64_t prompt_tokens_cached = 0;    // prompt tokens reused from a slot's KV
  uint64_t generated_tokens_total = 0;
  int64_t sequences_active = 0;  // requests holding a slot
  int64_t sequences_queued = 0;  // requests waiting for a slot
  int64_t slots = 0;
  int64_t kv_cells_used = 0;   // KV rows holding a token, all slots
  int64_t kv_cells_total = 0;
  double prompt_seconds_total = 0;      // wall time of steps that read prompt tokens
  double generation_seconds_total = 0;  // wall time of steps that decoded
  uint64_t steps_total = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Queues a request. INVALID_ARGUMENT for an empty prompt or one that does
  // not fit a slot's context (the message names both numbers: "prompt of N
  // tokens does not fit the context of M"), RESOURCE_EXHAUSTED when the
  // queue is full, UNAVAILABLE after shutdown.
  virtual StatusOr<std::shared_ptr<Stream>> submit(CompletionRequest request) = 0;
  virtual EngineMetrics metrics() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  // The chat layout of the model's template (llm/chat/chat_template.hpp).
  virtual std::string chat_format() const = 0;
  virtual std::string model_id() const = 0;  // the model file's base name
  virtual int64_t n_ctx_per_slot() const = 0;
  // Stop taking requests (submit answers UNAVAILABLE). finish: let running
  // and queued requests complete; else cancel them. Returns when the
  // engine's thread has stopped; every stream has had its done event.
  virtual void shutdown(bool finish) = 0;
};

struct EngineOptions {
  int32_t slots = 4;          // sequences stepped at once (--parallel)
  int64_t n_ctx = 0;          // context per slot; 0: the model's, capped at 4096
  int64_t n_batch = 256;      // tokens per step at most (decodes plus prompt chunks)
  // Prompt tokens per step while other sequences decode: a long prompt is
  // read in chunks beside them, so their next tokens do not wait for the
  // whole prompt; with no decode running, up to n_batch. 0 (default): as
  // many as keep such a step within mixed_step_ratio times a decode-only
  // step, from the step times measured so far (8 before any are known;
  // steps that built a new graph not counted), but while more prompts wait
  // than sequences decode at least 8 per waiting prompt (a power of two at
  // most n_batch); > 0: this many.
  int64_t prefill_chunk = 0;
  double mixed_step_ratio = 2.0;
  int32_t max_queue = 64;     // requests waiting for a slot before submit refuses
  int n_threads = 0;          // 0: the device's default
  loom_type_t kv_type = LOOM_TYPE_F16;  // the KV cache's element type (--kv-type)
};

}  // namespace loom::llm::serve
