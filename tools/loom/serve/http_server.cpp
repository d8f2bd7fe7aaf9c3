#include "serve/http_server.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "loom/runtime/log.hpp"
#include "serve/completion_route.hpp"
#include "serve/http_reply.hpp"
#include "serve/metrics_text.hpp"
#include "serve/openai_request.hpp"
#include "serve/openai_response.hpp"

namespace loom::cli::serve {
namespace {

using llm::serve::Engine;

// Bytes of an over-long chunked body read and dropped before the 413, so
// the connection stays in step; past this it is cut.
constexpr size_t kDrainLimit = size_t{64} << 20;
constexpr int kDefaultWorkers = 64;

std::string clip(const std::string& s, size_t n = 200) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

}  // namespace

struct HttpServer::Impl {
  ServerOptions options;
  httplib::Server svr;
  int port = 0;
  int64_t created = 0;
  std::thread thread;
  std::mutex mu;  // engine, stopped
  std::shared_ptr<Engine> engine;
  bool stopped = false;
  std::atomic<bool> shutting_down{false};
  std::atomic<bool> listen_returned{false};
  int listen_fd = -1;  // the bound socket, to raise its backlog
  std::shared_ptr<std::atomic<int>> streams = std::make_shared<std::atomic<int>>(0);

  std::shared_ptr<Engine> current_engine() {
    std::lock_guard<std::mutex> lock(mu);
    return engine;
  }

  // The body of a POST, at most options.max_body_bytes; false after
  // answering 413 or 400.
  bool read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
                 std::string* body) {
    const size_t limit = options.max_body_bytes;
    size_t seen = 0;
    auto take = [&](const char* data, size_t n) {
      seen += n;
      if (seen > limit) return seen <= kDrainLimit;  // keep reading, drop it
      body->append(data, n);
      return true;
    };
    bool ok;
    if (req.is_multipart_form_data()) {
      ok = reader([](const httplib::MultipartFormData&) { return true; }, take);
      if (ok && seen <= limit) {
        send_error(res, 415, "[serve.http] multipart bodies are not accepted: send application/json",
                   "invalid_request_error", "", "unsupported_media_type");
        return false;
      }
    } else {
      ok = reader(take);
    }
    if (seen > limit || res.status == 413) {
      send_error(res, 413, "[serve.http] the request body is over the limit of " + std::to_string(limit) + " bytes",
                 "invalid_request_error", "", "payload_too_large");
      return false;
    }
    if (!ok) {
      send_error(res, 400, "[serve.http] the request body could not be read", "invalid_request_error");
      return false;
    }
    return true;
  }

  // The key check of every route but /health; false after answering 401.
  bool authorized(const httplib::Request& req, httplib::Response& res) {
    if (options.api_key.empty()) return true;
    const std::string header = req.get_header_value("Authorization");
    if (authorization_matches(header, options.api_key)) return true;
    send_error(res, 401,
               header.empty() ? "[serve.auth] no API key given: send the header 'Authorization: Bearer KEY'"
                              : "[serve.auth] the API key is not the server's",
               "invalid_request_error", "", "invalid_api_key");
    return false;
  }

  // The engine for a model route; null after answering 503.
  std::shared_ptr<Engine> engine_for(httplib::Response& res) {
    if (shutting_down) {
      send_error(res, 503, "[serve] the server is shutting down", "server_error", "", "shutting_down");
      return nullptr;
    }
    std::shared_ptr<Engine> e = current_engine();
    if (!e) send_error(res, 503, "[serve] the model is still loading", "server_error", "", "loading");
    return e;
  }

  // A POST route: body, key, engine, then fn(body, engine).
  template <typename Fn>
  httplib::Server::HandlerWithContentReader post(Fn fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
      std::string body;
      if (!read_body(req, res, reader, &body) || !authorized(req, res)) return;
      if (std::shared_ptr<Engine> e = engine_for(res)) fn(body, e, res);
    };
  }
  // A GET route: key, engine, then fn(req, engine).
  template <typename Fn>
  httplib::Server::Handler get(Fn fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      if (std::shared_ptr<Engine> e = engine_for(res)) fn(req, e, res);
    };
  }

  void add_routes();
  void add_handlers();
};

void HttpServer::Impl::add_routes() {
  auto completions = [this](Endpoint ep) {
    return post([this, ep](const std::string& body, const std::shared_ptr<Engine>& e, httplib::Response& res) {
      serve_completion(ep, body, e, streams, res);
    });
  };
  for (const char* prefix : {"/v1", ""}) {
    svr.Post(std::string(prefix) + "/chat/completions", completions(Endpoint::kChat));
    svr.Post(std::string(prefix) + "/completions", completions(Endpoint::kCompletion));
    svr.Get(std::string(prefix) + "/models", get([this](const httplib::Request&, const std::shared_ptr<Engine>& e,
                                                         httplib::Response& res) {
              send_json(res, 200, models_json(e->model_id(), created));
            }));
    svr.Get(std::string(prefix) + R"(/models/(.+))",
            get([this](const httplib::Request& req, const std::shared_ptr<Engine>& e, httplib::Response& res) {
              const std::string id = req.matches.size() > 1 ? std::string(req.matches[1]) : std::string();
              if (id != e->model_id()) {
                return send_error(res, 404, "[serve] no model '" + clip(id) + "' (this server has '" + e->model_id() + "')",
                                  "invalid_request_error", "model", "model_not_found");
              }
              send_json(res, 200, model_json(e->model_id(), created));
            }));
  }
  svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (shutting_down) return send_json(res, 503, Json{{"status", "shutting down"}});
    send_json(res, current_engine() ? 200 : 503, Json{{"status", current_engine() ? "ok" : "loading"}});
  });
  svr.Get("/metrics", get([](const httplib::Request&, const std::shared_ptr<Engine>& e, httplib::Response& res) {
            res.status = 200;
            res.set_content(prometheus_text(e->metrics()), kPrometheusContentType);
          }));
  svr.Post("/tokenize", post([](const std::string& body, const std::shared_ptr<Engine>& e, httplib::Response& res) {
             std::string param;
             auto r = parse_tokenize_request(body, &param);
             if (!r.ok()) return send_status(res, r.status(), param);
             const llm::Tokenizer& tok = e->tokenizer();
             send_json(res, 200, Json{{"tokens", r->add_special ? tok.encode_prompt(r->content)
                                                                 : tok.encode(r->content, false)}});
           }));
  svr.Post("/detokenize", post([](const std::string& body, const std::shared_ptr<Engine>& e, httplib::Response& res) {
             std::string param;
             auto ids = parse_detokenize_request(body, e->tokenizer().n_vocab(), &param);
             if (!ids.ok()) return send_status(res, ids.status(), param);
             auto text = e->tokenizer().decode(*ids);
             if (!text.ok()) return send_status(res, text.status(), "tokens");
             send_json(res, 200, Json{{"content", *text}});
           }));
}

// The answers httplib makes itself (no route, a body over the limit, a bad
// request line) as OpenAI errors, and an escaped exception as a 500.
void HttpServer::Impl::add_handlers() {
  // A Content-Length httplib would wait for (a huge or negative one reads
  // as a length it tries to skip): answered before any body is read.
  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_header("Content-Length")) return httplib::Server::HandlerResponse::Unhandled;
    const std::string v = req.get_header_value("Content-Length");
    const bool digits = !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
    if (digits && std::stoull(v) <= kDrainLimit) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("Connection", "close");
    if (!digits) {
      send_error(res, 400, "[serve.http] Content-Length is not a byte count", "invalid_request_error");
    } else {
      send_error(res, 413,
                 "[serve.http] the request body is over the limit of " + std::to_string(options.max_body_bytes) +
                     " bytes",
                 "invalid_request_error", "", "payload_too_large");
    }
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return;
    const int status = res.status;
    if (status == 404) {
      send_error(res, 404, "[serve.http] no route " + clip(req.method, 16) + " " + clip(req.path), "invalid_request_error",
                 "", "not_found");
    } else if (status == 413) {
      send_error(res, 413,
                 "[serve.http] the request body is over the limit of " + std::to_string(options.max_body_bytes) +
                     " bytes",
                 "invalid_request_error", "", "payload_too_large");
    } else if (status >= 500) {
      send_error(res, status, "[serve.http] internal error", "server_error");
    } else {
      send_error(res, status, "[serve.http] the request is not one this server reads (HTTP " +
                                  std::to_string(status) + ")",
                 "invalid_request_error");
    }
    res.status = status;
  });
  svr.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "an exception of unknown type";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    LOOM_LOG_ERROR("serve", "[serve.http] " + clip(req.path) + ": " + what);
    send_error(res, 500, "[serve.http] internal error", "server_error");
  });
  svr.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    LOOM_LOG_INFO("serve", req.method + " " + clip(req.path) + " " + std::to_string(res.status));
  });
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(0); }

StatusOr<std::unique_ptr<HttpServer>> HttpServer::bind(const ServerOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return invalid_argument("[serve.bind] port " + std::to_string(options.port) + " is outside [0, 65535]");
  }
  if (options.max_body_bytes == 0 || options.timeout_s <= 0) {
    return invalid_argument("[serve.bind] the body limit and the timeout must be positive");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->created = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  httplib::Server& svr = impl->svr;
  const int workers = options.worker_threads > 0 ? options.worker_threads : kDefaultWorkers;
  svr.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<size_t>(workers)); };
  svr.set_payload_max_length(options.max_body_bytes);
  svr.set_read_timeout(options.timeout_s, 0);
  svr.set_write_timeout(options.timeout_s, 0);
  Impl* raw = impl.get();
  svr.set_socket_options([raw](socket_t sock) {
    httplib::default_socket_options(sock);
    raw->listen_fd = sock;
  });
  impl->add_handlers();
  impl->add_routes();
  if (options.port == 0) {
    impl->port = svr.bind_to_any_port(options.host);
  } else {
    impl->port = svr.bind_to_port(options.host, options.port) ? options.port : -1;
  }
  if (impl->port <= 0) {
    return unavailable("[serve.bind] cannot listen on " + options.host + ":" + std::to_string(options.port) +
                       " (address in use, or not an address of this machine)");
  }
  // httplib listens with a backlog of 5: a burst of clients connecting at
  // once would wait a second for the SYN to be retried.
  if (impl->listen_fd >= 0) ::listen(impl->listen_fd, SOMAXCONN);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port; }
const std::string& HttpServer::host() const { return impl_->options.host; }

Status HttpServer::start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->stopped || impl_->thread.joinable()) return invalid_argument("[serve.start] the server was started");
  Impl* impl = impl_.get();
  try {
    impl_->thread = std::thread([impl] {
      impl->svr.listen_after_bind();
      impl->listen_returned = true;
    });
  } catch (const std::exception& e) {
    return unavailable(std::string("[serve.start] no thread for the server: ") + e.what());
  }
  return Status();
}

void HttpServer::set_engine(std::shared_ptr<Engine> engine) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->engine = std::move(engine);
}

void HttpServer::begin_shutdown() { impl_->shutting_down = true; }

void HttpServer::stop(int grace_ms) {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
    thread = std::move(impl_->thread);
  }
  impl_->shutting_down = true;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (*impl_->streams > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (thread.joinable()) {
    // httplib's stop() acts only on a running server: wait until the
    // thread's listen has begun (or already ended).
    while (!impl_->svr.is_running() && !impl_->listen_returned) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    impl_->svr.stop();
    thread.join();
  }
}

}  // namespace loom::cli::serve
