// POST /v1/chat/completions and /v1/completions: the body parsed
// (openai_request), the prompt rendered and tokenized (chat_prompt), the
// request submitted to the engine, and its stream answered: with "stream":
// true as server-sent events ("data: {chunk}\n\n" ..., "data: [DONE]\n\n"),
// else as one JSON object when the completion is done. Both are written by
// a chunked content provider that waits for the engine's events in short
// slices, so a client that goes away (its socket closed, a write failing)
// cancels the stream within one slice, and a server that stops ends it.
// Internal to tools/loom/serve.
#pragma once

#include <httplib.h>

#include <atomic>
#include <memory>
#include <string>

#include "llm/serve/engine.hpp"
#include "serve/openai_request.hpp"

namespace loom::cli::serve {

// Answers `res` for one request body. `streams` counts the answers still
// being written (incremented here, decremented when httplib lets go of
// the provider), so a stopping server can wait for them.
void serve_completion(Endpoint endpoint, const std::string& body, const std::shared_ptr<llm::serve::Engine>& engine,
                      const std::shared_ptr<std::atomic<int>>& streams, httplib::Response& res);

}  // namespace loom::cli::serve
