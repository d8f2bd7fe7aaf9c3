// The HTTP server of `loom serve`, on cpp-httplib: OpenAI's routes over a
// serving engine (llm/serve/engine.hpp) plus the operator's ones.
//   POST /v1/chat/completions, POST /v1/completions  (stream: server-sent events)
//   GET  /v1/models, GET /v1/models/{id}
//   GET  /health        503 {"status": "loading"} until set_engine, then 200
//   POST /tokenize      {"content": TEXT} -> {"tokens": [...]}
//   POST /detokenize    {"tokens": [...]} -> {"content": TEXT}
//   GET  /metrics       Prometheus text (serve/metrics_text.hpp)
// Errors are OpenAI error objects: 400 bad JSON or field (and a prompt
// longer than the context), 401 missing or wrong key (every route but
// /health, when a key is set), 404 unknown route, 413 body over the limit,
// 503 loading, queue full or shutting down, 500 an engine failure. A client
// that goes away mid-request has its stream cancelled.
//
// Lifetime: bind() opens the socket, start() serves on a thread of its own
// (connections on a pool of workers), stop() ends it; the destructor stops.
// The engine is shared: handlers hold it while they use it. Thread-safe:
// set_engine, begin_shutdown and stop may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "llm/serve/engine.hpp"
#include "loom/runtime/status.hpp"

namespace loom::cli::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                         // 0: a free port (port() says which)
  std::string api_key;                     // "": no key is asked for
  size_t max_body_bytes = size_t{8} << 20;  // larger request bodies: 413
  int timeout_s = 600;                     // read and write timeout of a connection
  int worker_threads = 0;                  // connections served at once; 0: 64
};

class HttpServer {
 public:
  // Binds host:port. UNAVAILABLE naming both when the address cannot be
  // bound (in use, not local), INVALID_ARGUMENT for bad options.
  static StatusOr<std::unique_ptr<HttpServer>> bind(const ServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  const std::string& host() const;

  // Serve on a thread of the server's own until stop().
  Status start();
  // From now on the model routes use `engine` and /health answers 200.
  void set_engine(std::shared_ptr<llm::serve::Engine> engine);
  // Refuse new requests with 503 while the running ones finish.
  void begin_shutdown();
  // Stop accepting, give running streams up to `grace_ms` to send their
  // end, close every connection, join the threads. Idempotent.
  void stop(int grace_ms = 2000);

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::cli::serve
