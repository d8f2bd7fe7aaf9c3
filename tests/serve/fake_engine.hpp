// A serving engine for the HTTP layer's tests (llm/serve/engine.hpp): no
// model, deterministic replies, and knobs for the paths a real engine takes
// rarely. Each request's reply is the pieces of `reply` (one event each,
// at most max_tokens of them; finish "length" when max_tokens cut it,
// else "stop"; with logprobs asked for, one TokenLogprob per piece: its
// first byte's token at -0.5 x its number, the alternatives 'a', 'b', ...
// at -1, -2, ...), then the done event with prompt_tokens = the prompt's
// length and completion_tokens = the pieces sent. Knobs:
//   hold(true)     streams wait (no events) until hold(false) or cancel()
//   queue_capacity submit refuses with RESOURCE_EXHAUSTED once that many
//                  streams are unfinished (a full queue)
//   n_ctx          a prompt longer than it is refused with the real
//                  engine's INVALID_ARGUMENT "prompt of N tokens does not
//                  fit the context of M"
// It records every request and whether each stream saw cancel().
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "llm/serve/engine.hpp"

namespace loom::test {

using llm::TokenId;
using llm::serve::CompletionEvent;
using llm::serve::CompletionRequest;
using llm::serve::FinishReason;

// <unk> <s> </s>, the 256 byte tokens, the space piece, then chatml's two
// control tokens: any text encodes (bytes) and decodes back.
inline llm::Tokenizer fake_tokenizer() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  tokens.push_back("\xe2\x96\x81");  // U+2581, SentencePiece's space
  types.push_back(1);
  tokens.push_back("<|im_start|>");
  types.push_back(3);
  tokens.push_back("<|im_end|>");
  types.push_back(3);
  llm::SpecialTokens sp;
  sp.eot = static_cast<TokenId>(tokens.size() - 1);
  return llm::Tokenizer::from_vocab(tokens, {}, types, sp, "fake").value();
}

class FakeEngine : public llm::serve::Engine {
 public:
  // What the engine and every stream share.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool hold = false;
    int unfinished = 0;
  };

  // One stream's state, kept by the engine after the stream is gone.
  struct Record {
    CompletionRequest request;
    bool cancelled = false;
    bool done = false;
  };

  class FakeStream : public llm::serve::Stream {
   public:
    FakeStream(std::shared_ptr<Shared> shared, std::shared_ptr<Record> rec, std::vector<std::string> reply)
        : shared_(std::move(shared)), rec_(std::move(rec)), reply_(std::move(reply)) {}
    bool next(CompletionEvent* ev, std::chrono::milliseconds timeout) override {
      std::unique_lock<std::mutex> lock(shared_->mu);
      if (rec_->done) return false;
      shared_->cv.wait_for(lock, timeout, [&] { return rec_->cancelled || !shared_->hold; });
      *ev = CompletionEvent();
      if (rec_->cancelled) return finish(ev, FinishReason::kCancelled);
      if (shared_->hold) return false;
      const size_t n = std::min<size_t>(reply_.size(), static_cast<size_t>(rec_->request.max_tokens));
      if (sent_ < n) {
        ev->text = reply_[sent_++];
        if (rec_->request.logprobs >= 0) {
          // One token per piece: its first byte's token, logprob -0.5 x its
          // number; `logprobs` alternatives 'a', 'b', ... at -1, -2, ...
          llm::serve::TokenLogprob t;
          t.token = 3 + static_cast<unsigned char>(ev->text[0]);
          t.logprob = -0.5f * static_cast<float>(sent_);
          for (int32_t k = 0; k < rec_->request.logprobs; ++k) t.top.emplace_back(3 + 'a' + k, -1.0f - k);
          ev->logprobs.push_back(t);
        }
        return true;
      }
      return finish(ev, n < reply_.size() ? FinishReason::kLength : FinishReason::kStop);
    }
    void cancel() override {
      std::lock_guard<std::mutex> lock(shared_->mu);
      rec_->cancelled = true;
      shared_->cv.notify_all();
    }

   private:
    bool finish(CompletionEvent* ev, FinishReason r) {
      ev->done = true;
      ev->finish = r;
      ev->prompt_tokens = static_cast<int64_t>(rec_->request.prompt.size());
      ev->completion_tokens = static_cast<int64_t>(sent_);
      rec_->done = true;
      --shared_->unfinished;
      return true;
    }
    std::shared_ptr<Shared> shared_;
    std::shared_ptr<Record> rec_;
    std::vector<std::string> reply_;
    size_t sent_ = 0;
  };

  FakeEngine() : tokenizer_(fake_tokenizer()) {}

  StatusOr<std::shared_ptr<llm::serve::Stream>> submit(CompletionRequest request) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shut_down_) return unavailable("[llm.serve] the engine is shut down");
    if (request.prompt.empty()) return invalid_argument("[llm.serve] the prompt is empty");
    if (static_cast<int64_t>(request.prompt.size()) > n_ctx) {
      ++rejected_;
      return invalid_argument("[llm.serve] prompt of " + std::to_string(request.prompt.size()) +
                              " tokens does not fit the context of " + std::to_string(n_ctx));
    }
    if (shared_->unfinished >= queue_capacity) {
      ++rejected_;
      return resource_exhausted("[llm.serve] the queue is full (" + std::to_string(queue_capacity) + " requests)");
    }
    auto rec = std::make_shared<Record>();
    rec->request = std::move(request);
    records_.push_back(rec);
    ++shared_->unfinished;
    return std::shared_ptr<llm::serve::Stream>(std::make_shared<FakeStream>(shared_, rec, reply));
  }

  llm::serve::EngineMetrics metrics() const override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    llm::serve::EngineMetrics m;
    m.requests_total = records_.size();
    m.requests_rejected = rejected_;
    m.prompt_tokens_total = 1000;
    m.generated_tokens_total = 500;
    m.sequences_active = shared_->unfinished;
    m.sequences_queued = 0;
    m.slots = 4;
    m.kv_cells_used = 42;
    m.kv_cells_total = 4 * n_ctx;
    m.prompt_seconds_total = 2.0;
    m.generation_seconds_total = 5.0;
    m.steps_total = 77;
    return m;
  }
  const llm::Tokenizer& tokenizer() const override { return tokenizer_; }
  std::string chat_format() const override { return "chatml"; }
  std::string model_id() const override { return "fake.gguf"; }
  int64_t n_ctx_per_slot() const override { return n_ctx; }
  void shutdown(bool finish) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shut_down_ = true;
    if (!finish) {
      for (auto& r : records_) r->cancelled = true;
    }
    shared_->hold = false;
    shared_->cv.notify_all();
  }

  void hold(bool on) {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->hold = on;
    shared_->cv.notify_all();
  }
  // The requests submitted so far (copies).
  std::vector<Record> records() const {
    std::lock_guard<std::mutex> lock(shared_->mu);
    std::vector<Record> out;
    for (const auto& r : records_) out.push_back(*r);
    return out;
  }
  // Waits until request i was cancelled (false on timeout).
  bool wait_cancelled(size_t i, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(shared_->mu);
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (i < records_.size() && records_[i]->cancelled) return true;
      shared_->cv.wait_for(lock, std::chrono::milliseconds(10));
    }
    return false;
  }
  int unfinished() const {
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->unfinished;
  }

  // Settings (before requests arrive).
  std::vector<std::string> reply = {"Hello", ",", " world", "!"};
  int queue_capacity = 1000;
  int64_t n_ctx = 64;

 private:
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  llm::Tokenizer tokenizer_;
  std::vector<std::shared_ptr<Record>> records_;
  uint64_t rejected_ = 0;
  bool shut_down_ = false;
};

}  // namespace loom::test
