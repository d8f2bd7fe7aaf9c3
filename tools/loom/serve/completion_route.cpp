#include "serve/completion_route.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include "llm/chat/chat_template.hpp"
#include "loom/runtime/log.hpp"
#include "serve/chat_prompt.hpp"
#include "serve/http_reply.hpp"
#include "serve/openai_response.hpp"

namespace loom::cli::serve {
namespace {

using llm::serve::CompletionEvent;
using llm::serve::Engine;
using llm::serve::FinishReason;
using llm::serve::Stream;

// How long one call of the content provider waits for an event before it
// looks at the connection (and lets httplib see a stopping server).
constexpr std::chrono::milliseconds kSlice{100};
// Tokens a completion (not chat) request generates when max_tokens is not
// given: OpenAI's default.
constexpr int64_t kDefaultCompletionTokens = 16;

// The error that ends a request whose stream did not finish.
Json unfinished_error(const CompletionEvent& ev) {
  if (ev.finish == FinishReason::kCancelled) {
    return error_json("[serve] the request was cancelled (the server is shutting down)", "server_error", "",
                      "cancelled");
  }
  const std::string msg = ev.error.ok() ? "[serve] the engine ended the request without a result" : ev.error.message();
  return error_json(msg, "server_error", "", "engine_error");
}

// One submitted request and the writing of its answer; owned by the
// provider and releaser functions httplib holds.
class Job {
 public:
  Job(std::shared_ptr<Stream> stream, std::shared_ptr<Engine> engine, ResponseMeta meta, bool include_usage,
      bool logprobs, std::shared_ptr<std::atomic<int>> streams)
      : stream_(std::move(stream)),
        engine_(std::move(engine)),
        meta_(std::move(meta)),
        include_usage_(include_usage),
        logprobs_(logprobs),
        streams_(std::move(streams)) {
    ++*streams_;
  }
  ~Job() {
    if (!done_) stream_->cancel();
    --*streams_;
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // One step of a server-sent-event answer; false ends the response. Every
  // event waiting goes out in one write (a writer that fell behind catches
  // up with one wake-up and one send, not one per token).
  bool pump_events(httplib::DataSink& sink) {
    std::string out;
    if (!started_) {
      started_ = true;
      if (meta_.endpoint == Endpoint::kChat) out = sse_event(chunk_json(meta_, "", true, nullptr));
    }
    CompletionEvent ev;
    if (!stream_->next(&ev, kSlice)) return out.empty() ? still_there(sink) : write(sink, out);
    Json lp;
    for (;;) {
      // The event's tokens' logprobs ride with its text, or with the
      // finish chunk when they made none.
      lp = logprobs_ ? logprobs_json(meta_.endpoint, ev.logprobs, engine_->tokenizer(), &text_offset_) : Json();
      if (!ev.text.empty()) {
        out += sse_event(chunk_json(meta_, ev.text, false, nullptr, std::move(lp)));
        lp = Json();
      }
      if (ev.done || !stream_->next(&ev, std::chrono::milliseconds(0))) break;
    }
    if (!ev.done) return out.empty() || write(sink, out);
    const bool lp_left = logprobs_ && ev.text.empty() && !ev.logprobs.empty();
    done_ = true;
    if (const char* finish = openai_finish_reason(ev.finish)) {
      out += sse_event(chunk_json(meta_, "", false, finish, lp_left ? std::move(lp) : Json()));
      if (include_usage_) out += sse_event(usage_chunk_json(meta_, usage_of(ev)));
    } else {
      out += sse_event(unfinished_error(ev));
    }
    out += kSseDone;
    if (!write(sink, out)) return false;
    sink.done();
    return true;
  }

  // One step of a whole-JSON answer: the text gathers until the done event.
  bool pump_whole(httplib::DataSink& sink) {
    CompletionEvent ev;
    if (!stream_->next(&ev, kSlice)) return still_there(sink);
    text_ += ev.text;
    tokens_.insert(tokens_.end(), ev.logprobs.begin(), ev.logprobs.end());
    if (!ev.done) return true;
    done_ = true;
    const char* finish = openai_finish_reason(ev.finish);
    Json lp = logprobs_ ? logprobs_json(meta_.endpoint, tokens_, engine_->tokenizer(), &text_offset_) : Json();
    const std::string body =
        json_body(finish ? completion_json(meta_, text_, finish, usage_of(ev), std::move(lp)) : unfinished_error(ev));
    if (!write(sink, body)) return false;
    sink.done();
    return true;
  }

 private:
  // No event this slice: is the client still connected?
  bool still_there(httplib::DataSink& sink) {
    if (sink.is_writable()) return true;
    stream_->cancel();
    return false;
  }
  bool write(httplib::DataSink& sink, const std::string& s) {
    if (sink.write(s.data(), s.size())) return true;
    stream_->cancel();
    return false;
  }

  std::shared_ptr<Stream> stream_;
  std::shared_ptr<Engine> engine_;  // outlives the stream
  ResponseMeta meta_;
  bool include_usage_;
  bool logprobs_;  // the request asked for them
  std::shared_ptr<std::atomic<int>> streams_;
  std::vector<llm::serve::TokenLogprob> tokens_;  // a whole answer's, gathered
  int64_t text_offset_ = 0;                        // bytes of text the logprobs so far cover
  bool started_ = false;
  bool done_ = false;
  std::string text_;
};

// A provider step that never lets an exception into httplib (which calls
// providers outside its own handler's try).
template <typename Step>
bool guarded_step(const char* what, Step&& step) noexcept {
  try {
    return step();
  } catch (const std::exception& e) {
    LOOM_LOG_ERROR("serve", std::string("[serve.stream] ") + what + ": " + e.what());
  } catch (...) {
    LOOM_LOG_ERROR("serve", std::string("[serve.stream] ") + what + ": an exception of unknown type");
  }
  return false;
}

// The prompt's tokens; *param names the field on error.
StatusOr<std::vector<llm::TokenId>> prompt_of(const OpenAiRequest& r, const Engine& engine, std::string* param) {
  if (r.endpoint == Endpoint::kChat) {
    const llm::ChatTemplate format(chat_format_named(engine.chat_format()));
    return chat_prompt_tokens(r.messages, format, engine.tokenizer(), param);
  }
  return completion_prompt_tokens(r, engine.tokenizer(), param);
}

// max_tokens as given, else OpenAI's defaults (chat: the rest of the
// context; completion: 16), never past the end of the context.
int32_t max_tokens_of(const OpenAiRequest& r, int64_t n_prompt, int64_t n_ctx) {
  const int64_t room = n_ctx - n_prompt;
  int64_t n = r.max_tokens >= 0 ? r.max_tokens : r.endpoint == Endpoint::kChat ? room : kDefaultCompletionTokens;
  if (room > 0) n = std::min(n, room);
  return static_cast<int32_t>(std::max<int64_t>(n, 0));
}

}  // namespace

void serve_completion(Endpoint endpoint, const std::string& body, const std::shared_ptr<Engine>& engine,
                      const std::shared_ptr<std::atomic<int>>& streams, httplib::Response& res) {
  std::string param;
  auto request = parse_openai_request(endpoint, body, &param);
  if (!request.ok()) return send_status(res, request.status(), param);
  auto prompt = prompt_of(*request, *engine, &param);
  if (!prompt.ok()) return send_status(res, prompt.status(), param);

  llm::serve::CompletionRequest cr;
  cr.max_tokens = max_tokens_of(*request, static_cast<int64_t>(prompt->size()), engine->n_ctx_per_slot());
  cr.prompt = std::move(prompt).value();
  cr.sampling = request->sampling;
  cr.stop = request->stop;
  cr.ignore_eos = request->ignore_eos;
  cr.logprobs = request->logprobs;
  auto stream = engine->submit(std::move(cr));
  if (!stream.ok()) {
    // The engine refuses a prompt only for its length (or emptiness).
    const bool about_prompt = stream.status().code() == StatusCode::kInvalidArgument;
    return send_status(res, stream.status(), about_prompt ? (endpoint == Endpoint::kChat ? "messages" : "prompt") : "");
  }
  auto job = std::make_shared<Job>(std::move(stream).value(), engine, new_response_meta(endpoint, engine->model_id()),
                                   request->include_usage, request->logprobs >= 0, streams);
  res.status = 200;
  if (request->stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [job](size_t, httplib::DataSink& sink) {
          return guarded_step("events", [&] { return job->pump_events(sink); });
        },
        [job](bool) mutable { job.reset(); });
  } else {
    res.set_chunked_content_provider(
        "application/json",
        [job](size_t, httplib::DataSink& sink) { return guarded_step("body", [&] { return job->pump_whole(sink); }); },
        [job](bool) mutable { job.reset(); });
  }
}

}  // namespace loom::cli::serve
