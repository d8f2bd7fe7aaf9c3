#include "llm/serve/llama_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include <time.h>

#include "llm/chat/chat_template.hpp"
#include "llm/serve/completion_text.hpp"
#include "llm/serve/step_time.hpp"
#include "llm/session/llama_session.hpp"
#include "loom/runtime/log.hpp"

namespace loom::llm::serve {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
    case FinishReason::kNone: break;
  }
  return "none";
}

namespace {

using Clock = std::chrono::steady_clock;

// This thread's CPU time in seconds (what the debug line compares with the
// wall time: a thread that waited for a core shows less CPU than wall).
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// What the engine and a request's Stream share: the request, the events
// not yet taken, the cancel flag.
struct Request {
  CompletionRequest req;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<CompletionEvent> events;
  bool finished = false;  // the done event was queued
  bool drained = false;   // the done event was taken
  std::atomic<bool> cancelled{false};

  void push(CompletionEvent ev) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (finished) return;
      finished = ev.done;
      events.push_back(std::move(ev));
    }
    cv.notify_all();
  }
};

class RequestStream : public Stream {
 public:
  RequestStream(std::shared_ptr<Request> r, std::function<void()> wake) : r_(std::move(r)), wake_(std::move(wake)) {}
  ~RequestStream() override { cancel(); }

  bool next(CompletionEvent* ev, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(r_->mu);
    if (r_->drained) return false;
    if (!r_->cv.wait_for(lock, timeout, [&] { return !r_->events.empty(); })) return false;
    *ev = std::move(r_->events.front());
    r_->events.pop_front();
    if (ev->done) r_->drained = true;
    return true;
  }

  void cancel() override {
    {
      // A finished request needs no wake (and its engine may be gone).
      std::lock_guard<std::mutex> lock(r_->mu);
      if (r_->finished) return;
    }
    if (r_->cancelled.exchange(true)) return;
    wake_();
  }

 private:
  std::shared_ptr<Request> r_;
  std::function<void()> wake_;
};

// One sequence slot of the session's KV cache.
struct Slot {
  std::shared_ptr<Request> r;      // null: free
  std::vector<TokenId> cached;     // tokens whose KV rows [0, size) hold (valid also while free)
  size_t n_read = 0;               // prompt tokens in `cached` (reused or evaluated)
  std::optional<Sampler> sampler;
  std::optional<CompletionText> text;
  TokenId next = -1;               // sampled, not yet evaluated (decoding)
  int64_t generated = 0;
  int64_t reused = 0;              // prompt tokens reused from a cache
  uint64_t order = 0;              // admission order: prompts are read first come, first served
  std::vector<TokenLogprob> logprobs;  // generated tokens not yet sent with an event (req.logprobs >= 0)
  bool decoding() const { return r != nullptr && n_read == r->req.prompt.size(); }
};

// The log-softmax of logits[id] and the `top` most likely tokens (ties: the
// lower id), in double sums.
TokenLogprob token_logprob(const float* logits, int32_t n_vocab, TokenId id, int32_t top) {
  float mx = logits[0];
  for (int32_t i = 1; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
  double sum = 0.0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double log_z = static_cast<double>(mx) + std::log(sum);
  TokenLogprob out;
  out.token = id;
  out.logprob = static_cast<float>(static_cast<double>(logits[id]) - log_z);
  const auto k = static_cast<size_t>(std::min(top, n_vocab));
  if (k == 0) return out;
  std::vector<TokenId> ids(static_cast<size_t>(n_vocab));
  for (int32_t i = 0; i < n_vocab; ++i) ids[static_cast<size_t>(i)] = i;
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](TokenId a, TokenId b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (size_t j = 0; j < k; ++j) {
    out.top.emplace_back(ids[j], static_cast<float>(static_cast<double>(logits[ids[j]]) - log_z));
  }
  return out;
}

size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

class LlamaEngine : public Engine {
 public:
  LlamaEngine(std::unique_ptr<LlamaModel> model, Tokenizer tok, std::unique_ptr<LlamaSession> session,
              std::string id, const EngineOptions& o)
      : model_(std::move(model)),
        tok_(std::move(tok)),
        session_(std::move(session)),
        id_(std::move(id)),
        opts_(o),
        slots_(static_cast<size_t>(o.slots)) {
    std::string jinja;
    if (auto t = model_->file().get_str("tokenizer.chat_template"); t.ok()) jinja = *t;
    chat_format_ = chat_format_name(detect_chat_format(jinja));
    thread_ = std::thread([this] { run(); });
  }

  ~LlamaEngine() override {
    shutdown(false);
    // The session's steps live in the model's context: the session goes first.
    session_.reset();
  }

  StatusOr<std::shared_ptr<Stream>> submit(CompletionRequest request) override {
    const auto n = static_cast<int64_t>(request.prompt.size());
    std::unique_lock<std::mutex> lock(mu_);
    auto refuse = [&](Status st) -> StatusOr<std::shared_ptr<Stream>> {
      ++metrics_.requests_rejected;
      return st;
    };
    if (stopping_) return refuse(unavailable("[llm.serve] the server is shutting down"));
    if (n == 0) return refuse(invalid_argument("[llm.serve] the prompt is empty"));
    if (n > n_ctx_per_slot()) {
      return refuse(invalid_argument("[llm.serve] prompt of " + std::to_string(n) +
                                     " tokens does not fit the context of " + std::to_string(n_ctx_per_slot())));
    }
    for (TokenId t : request.prompt) {
      if (t < 0 || t >= tok_.n_vocab()) {
        return refuse(invalid_argument("[llm.serve] token id " + std::to_string(t) + " outside the vocabulary [0, " +
                                       std::to_string(tok_.n_vocab()) + ")"));
      }
    }
    if (request.max_tokens < 0) {
      return refuse(invalid_argument("[llm.serve] max_tokens " + std::to_string(request.max_tokens) +
                                     " must be >= 0"));
    }
    if (request.logprobs < -1 || request.logprobs > kMaxTopLogprobs) {
      return refuse(invalid_argument("[llm.serve] logprobs " + std::to_string(request.logprobs) + " outside [-1, " +
                                     std::to_string(kMaxTopLogprobs) + "]"));
    }
    StatusOr<Sampler> sampler = Sampler::create(request.sampling);
    if (!sampler.ok()) return refuse(sampler.status());
    if (static_cast<int64_t>(queue_.size()) >= opts_.max_queue) {
      return refuse(resource_exhausted("[llm.serve] " + std::to_string(queue_.size()) +
                                       " requests are waiting already (--max-queue " +
                                       std::to_string(opts_.max_queue) + ")"));
    }
    auto r = std::make_shared<Request>();
    r->req = std::move(request);
    queue_.push_back(r);
    ++metrics_.requests_total;
    lock.unlock();
    cv_.notify_all();
    return std::shared_ptr<Stream>(std::make_shared<RequestStream>(r, [this] { wake(); }));
  }

  EngineMetrics metrics() const override {
    std::lock_guard<std::mutex> lock(mu_);
    EngineMetrics m = metrics_;
    m.sequences_queued = static_cast<int64_t>(queue_.size());
    m.slots = static_cast<int64_t>(slots_.size());
    m.kv_cells_total = n_ctx_per_slot() * m.slots;
    return m;
  }

  const Tokenizer& tokenizer() const override { return tok_; }
  std::string chat_format() const override { return chat_format_; }
  std::string model_id() const override { return id_; }
  int64_t n_ctx_per_slot() const override { return session_->n_ctx(); }

  void shutdown(bool finish) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      finish_ = finish;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void wake() {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }

  bool any_active() const {
    return std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.r != nullptr; });
  }

  void run() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || any_active(); });
        if (stopping_ && !finish_) {
          for (auto& r : queue_) finish_request(r, FinishReason::kCancelled, 0, 0, 0, Status());
          queue_.clear();
          lock.unlock();
          for (Slot& s : slots_) {
            if (s.r) end_slot(s, FinishReason::kCancelled, Status());
          }
          return;
        }
        if (stopping_ && queue_.empty() && !any_active()) return;
        admit();
      }
      drop_cancelled();
      step();
    }
  }

  static void finish_request(const std::shared_ptr<Request>& r, FinishReason why, int64_t prompt, int64_t gen,
                             int64_t cached, Status error, std::string text = {},
                             std::vector<TokenLogprob> logprobs = {}) {
    CompletionEvent ev;
    ev.text = std::move(text);
    ev.logprobs = std::move(logprobs);
    ev.done = true;
    ev.finish = why;
    ev.prompt_tokens = prompt;
    ev.completion_tokens = gen;
    ev.cached_tokens = cached;
    ev.error = std::move(error);
    r->push(std::move(ev));
  }

  // Under mu_: queued requests into free slots, each into the free slot
  // whose cached tokens share the longest prefix with its prompt; a longer
  // prefix in another slot (busy or not) is copied over.
  void admit() {
    while (!queue_.empty()) {
      std::shared_ptr<Request> r = queue_.front();
      if (r->cancelled) {
        queue_.pop_front();
        finish_request(r, FinishReason::kCancelled, static_cast<int64_t>(r->req.prompt.size()), 0, 0, Status());
        continue;
      }
      const std::vector<TokenId>& p = r->req.prompt;
      int best = -1;
      size_t best_len = 0;
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].r) continue;
        const size_t len = common_prefix(slots_[i].cached, p);
        if (best < 0 || len > best_len) {
          best = static_cast<int>(i);
          best_len = len;
        }
      }
      if (best < 0) return;  // every slot busy
      queue_.pop_front();
      Slot& s = slots_[static_cast<size_t>(best)];
      // The last prompt token is always evaluated: its logits give the first
      // token. A slot whose sliding-window rows moved past the prefix's
      // window cannot continue it (reusable: 0, recomputed).
      auto reusable = [&](size_t slot, size_t len) {
        return static_cast<size_t>(session_->reusable_prefix(static_cast<int32_t>(slot), static_cast<int64_t>(len)));
      };
      const size_t own = reusable(static_cast<size_t>(best), std::min(best_len, p.size() - 1));
      size_t reuse = own;
      int donor = -1;
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (static_cast<int>(i) == best) continue;
        const size_t len = reusable(i, std::min(common_prefix(slots_[i].cached, p), p.size() - 1));
        if (len > reuse && len >= kMinCopy) {
          reuse = len;
          donor = static_cast<int>(i);
        }
      }
      if (donor >= 0) {
        Status st = session_->copy_seq(donor, best, static_cast<int64_t>(reuse));
        if (!st.ok()) {
          LOOM_LOG_WARN("serve", "prefix copy failed, computing it: " + st.to_string());
          reuse = own;
        } else {
          s.cached.assign(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(reuse));
        }
      }
      s.cached.resize(reuse);
      s.r = r;
      s.n_read = reuse;
      s.reused = static_cast<int64_t>(reuse);
      s.generated = 0;
      s.next = -1;
      s.order = next_order_++;
      s.sampler.emplace(Sampler::create(r->req.sampling).value());
      s.text.reset();
      metrics_.prompt_tokens_cached += reuse;
      ++metrics_.sequences_active;
    }
  }

  void drop_cancelled() {
    for (Slot& s : slots_) {
      if (s.r && s.r->cancelled) end_slot(s, FinishReason::kCancelled, Status());
    }
  }

  // The request in s ends: its done event; the slot is free again (its
  // cached tokens stay for a later prompt that starts the same way).
  void end_slot(Slot& s, FinishReason why, Status error) {
    std::string rest = s.text && why != FinishReason::kCancelled ? s.text->flush() : std::string();
    std::vector<TokenLogprob> logprobs = std::move(s.logprobs);
    s.logprobs.clear();
    {
      // Counted first: whoever sees the done event sees the slot free.
      std::lock_guard<std::mutex> lock(mu_);
      --metrics_.sequences_active;
    }
    finish_request(s.r, why, static_cast<int64_t>(s.r->req.prompt.size()), s.generated, s.reused, std::move(error),
                   std::move(rest), std::move(logprobs));
    s.r.reset();
    s.text.reset();
    s.sampler.reset();
  }

  // One step: the next token of every decoding slot, then prompt tokens of
  // the slots still reading theirs (first come, first served) up to the
  // step's budget.
  void step() {
    std::vector<SeqToken> batch;
    int64_t n_prompt = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if (!s.r || !s.decoding() || s.next < 0) continue;
      batch.push_back({s.next, static_cast<int32_t>(i), static_cast<int32_t>(s.cached.size()), true});
    }
    const bool decodes = !batch.empty();
    std::vector<Slot*> reading;
    for (Slot& s : slots_) {
      if (s.r && !s.decoding()) reading.push_back(&s);
    }
    int64_t budget = opts_.n_batch - static_cast<int64_t>(batch.size());
    if (decodes) {
      budget = std::min(budget, opts_.prefill_chunk > 0
                                    ? opts_.prefill_chunk
                                    : prefill_budget(step_time_, {static_cast<int64_t>(batch.size()),
                                                                  static_cast<int64_t>(reading.size()), opts_.n_batch,
                                                                  opts_.mixed_step_ratio}));
    }
    std::sort(reading.begin(), reading.end(), [](const Slot* a, const Slot* b) { return a->order < b->order; });
    if (decodes && opts_.prefill_chunk == 0 && budget > 0) {
      // Beside decodes, a power of two of prompt tokens in all, the end of
      // a prompt included (its rest split over steps: 37 left -> 32, 4, 1):
      // a step of a new shape builds its graph (milliseconds), which the
      // running streams would feel at every prompt's end.
      int64_t left = 0;
      for (const Slot* s : reading) left += static_cast<int64_t>(s->r->req.prompt.size() - s->n_read);
      if (left > 0) budget = pow2_floor(std::min(budget, left));
    }
    std::vector<std::pair<Slot*, size_t>> read;  // slot, tokens read this step
    for (Slot* s : reading) {
      if (budget <= 0) break;
      const std::vector<TokenId>& p = s->r->req.prompt;
      const auto take = static_cast<size_t>(std::min<int64_t>(budget, static_cast<int64_t>(p.size() - s->n_read)));
      const auto seq = static_cast<int32_t>(s - slots_.data());
      for (size_t j = s->n_read; j < s->n_read + take; ++j) {
        const bool last = j + 1 == p.size();
        batch.push_back({p[j], seq, static_cast<int32_t>(j), last});
      }
      read.emplace_back(s, take);
      budget -= static_cast<int64_t>(take);
      n_prompt += static_cast<int64_t>(take);
    }
    if (batch.empty()) return;
    // Per logits row (batch order), its slot.
    std::vector<Slot*> row_slot;
    for (const SeqToken& t : batch) {
      if (t.logits) row_slot.push_back(&slots_[static_cast<size_t>(t.seq)]);
    }
    if (row_slot.empty()) {
      // Only middle chunks of prompts: ask for the last token's logits anyway
      // (eval_seqs wants one row) and ignore them.
      batch.back().logits = true;
      row_slot.push_back(nullptr);
    }
    const auto t0 = Clock::now();
    // The engine thread's CPU clock (a system call) only for the debug line.
    const bool debug = log_enabled(LogLevel::kDebug, "serve");
    const double c0 = debug ? thread_cpu_s() : 0.0;
    // The engine's own time since the last step's graph ended (sampling,
    // admitting, waiting for the lock): what the streams wait besides steps.
    const double between = last_end_ ? std::chrono::duration<double>(t0 - *last_end_).count() : 0.0;
    std::vector<float>& logits = logits_;  // kept: no allocation per step
    const size_t built_before = session_->steps_built();
    Status st = session_->eval_seqs(batch, &logits);
    const auto t1 = Clock::now();
    const double c1 = debug ? thread_cpu_s() : 0.0;
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    // A step that built its graph (a new shape) says nothing about the
    // next ones: it is not learned from.
    const bool built = session_->steps_built() != built_before;
    LOOM_LOG_DEBUG("serve", "step: " + std::to_string(batch.size() - static_cast<size_t>(n_prompt)) + " decodes + " +
                                std::to_string(n_prompt) + " prompt tokens of " + std::to_string(read.size()) +
                                " prompts, " + std::to_string(secs * 1e3) + " ms (" +
                                std::to_string((c1 - c0) * 1e3) + " CPU)" +
                                (built ? " (graph built)" : "") + ", " + std::to_string(between * 1e3) +
                                " ms since the last (" +
                                std::to_string(last_end_ && last_end_cpu_ > 0 ? (c0 - last_end_cpu_) * 1e3 : 0.0) +
                                " CPU)");
    if (st.ok() && !built) step_time_.add(static_cast<int64_t>(batch.size()), secs);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++metrics_.steps_total;
      if (n_prompt > 0) metrics_.prompt_seconds_total += secs;
      if (decodes) metrics_.generation_seconds_total += secs;
      if (st.ok()) metrics_.prompt_tokens_total += static_cast<uint64_t>(n_prompt);
    }
    if (!st.ok()) {
      LOOM_LOG_WARN("serve", "step failed: " + st.to_string());
      // The rows this step wrote are not trustworthy: every sequence in it ends.
      for (size_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        const bool in_batch = std::any_of(batch.begin(), batch.end(), [&](const SeqToken& t) {
          return t.seq == static_cast<int32_t>(i);
        });
        if (!in_batch || !s.r) continue;
        s.cached.clear();
        end_slot(s, FinishReason::kError, st);
      }
      return;
    }
    // The tokens evaluated are now cached.
    for (Slot& s : slots_) {
      if (s.r && s.decoding() && s.next >= 0) {
        s.cached.push_back(s.next);
        s.next = -1;
      }
    }
    for (auto& [s, take] : read) {
      const std::vector<TokenId>& p = s->r->req.prompt;
      s->cached.insert(s->cached.end(), p.begin() + static_cast<std::ptrdiff_t>(s->n_read),
                       p.begin() + static_cast<std::ptrdiff_t>(s->n_read + take));
      s->n_read += take;
    }
    {
      int64_t cells = 0;
      for (const Slot& s : slots_) cells += static_cast<int64_t>(s.cached.size());
      std::lock_guard<std::mutex> lock(mu_);
      metrics_.kv_cells_used = cells;
    }
    const auto n_vocab = static_cast<int32_t>(model_->hparams().n_vocab);
    for (size_t row = 0; row < row_slot.size(); ++row) {
      Slot* s = row_slot[row];
      if (s == nullptr || !s->r || !s->decoding()) continue;
      sample(*s, logits.data() + row * static_cast<size_t>(n_vocab), n_vocab);
    }
    last_end_ = any_active() ? std::optional<Clock::time_point>(t1) : std::nullopt;
    last_end_cpu_ = c1;
  }

  // The next token of s from its logits: ends the request at an
  // end-of-generation token, a stop string, max_tokens or the context's end.
  void sample(Slot& s, const float* logits, int32_t n_vocab) {
    if (!s.text) {
      StatusOr<CompletionText> t = CompletionText::create(&tok_, s.r->req.prompt, s.r->req.stop);
      if (!t.ok()) return end_slot(s, FinishReason::kError, t.status());
      s.text.emplace(std::move(t).value());
    }
    if (s.generated >= s.r->req.max_tokens) return end_slot(s, FinishReason::kLength, Status());
    const TokenId tok = s.sampler->sample(logits, n_vocab);
    if (tok_.is_eog(tok) && !s.r->req.ignore_eos) return end_slot(s, FinishReason::kStop, Status());
    ++s.generated;
    if (s.r->req.logprobs >= 0) s.logprobs.push_back(token_logprob(logits, n_vocab, tok, s.r->req.logprobs));
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++metrics_.generated_tokens_total;
    }
    StatusOr<std::string> piece = s.text->add(tok);
    if (!piece.ok()) return end_slot(s, FinishReason::kError, piece.status());
    if (!piece->empty()) {
      CompletionEvent ev;
      ev.text = std::move(piece).value();
      ev.logprobs = std::move(s.logprobs);
      s.logprobs.clear();
      s.r->push(std::move(ev));
    }
    if (s.text->stopped()) return end_slot(s, FinishReason::kStop, Status());
    if (s.generated >= s.r->req.max_tokens) return end_slot(s, FinishReason::kLength, Status());
    if (static_cast<int64_t>(s.cached.size()) >= n_ctx_per_slot()) {
      return end_slot(s, FinishReason::kLength, Status());
    }
    s.next = tok;
  }

  static constexpr size_t kMinCopy = 16;  // shorter shared prefixes are recomputed, not copied
  StepTimeModel step_time_;  // engine thread
  std::vector<float> logits_;  // the last step's logits rows (engine thread)
  std::optional<Clock::time_point> last_end_;  // when the last step's graph ended, while slots were busy
  double last_end_cpu_ = 0;                    // the engine thread's CPU time then (0: not read)

  std::unique_ptr<LlamaModel> model_;
  Tokenizer tok_;
  std::unique_ptr<LlamaSession> session_;
  std::string id_;
  std::string chat_format_;
  EngineOptions opts_;
  std::vector<Slot> slots_;  // the engine thread's alone
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Request>> queue_;
  EngineMetrics metrics_;
  uint64_t next_order_ = 0;
  bool stopping_ = false;
  bool finish_ = true;
  std::thread thread_;
};

}  // namespace

StatusOr<std::unique_ptr<Engine>> make_llama_engine(std::unique_ptr<LlamaModel> model, std::string model_id,
                                                    const EngineOptions& o) {
  if (!model) return invalid_argument("[llm.serve] no model");
  if (o.slots < 1 || o.slots > 256) {
    return invalid_argument("[llm.serve] --parallel " + std::to_string(o.slots) + " must be in [1, 256]");
  }
  if (o.n_batch < 1 || o.prefill_chunk < 0 || o.max_queue < 0 || !(o.mixed_step_ratio >= 1.0)) {
    return invalid_argument("[llm.serve] batch " + std::to_string(o.n_batch) + ", prefill chunk " +
                            std::to_string(o.prefill_chunk) + ", queue " + std::to_string(o.max_queue) +
                            " and mixed step ratio " + std::to_string(o.mixed_step_ratio) +
                            " must be >= 1, >= 0, >= 0 and >= 1");
  }
  LOOM_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(model->file()));
  SessionOptions so;
  so.n_seq = o.slots;
  so.n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(model->hparams().n_ctx_train, 4096);
  // Every step's tokens in one graph: the batch holds a token per slot at least.
  so.n_batch = std::max<int64_t>(o.n_batch, o.slots);
  so.kv_type = o.kv_type;
  EngineOptions eo = o;
  eo.n_batch = so.n_batch;
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<LlamaSession> session, LlamaSession::create(model.get(), so));
  return std::unique_ptr<Engine>(
      new LlamaEngine(std::move(model), std::move(tok), std::move(session), std::move(model_id), eo));
}

}  // namespace loom::llm::serve
