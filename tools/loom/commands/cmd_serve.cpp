// `loom serve`: an OpenAI-compatible HTTP server (tools/loom/serve/) over
// the serving engine (llm/serve/llama_engine.hpp). The socket is bound and
// served first (GET /health answers 503 while the model loads), the model is
// loaded the way `loom run` loads it on a thread of its own, and the main
// thread waits for SIGINT or SIGTERM: then new requests are refused, the
// engine cancels what runs, the connections close and the command exits 0.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/model/model_open.hpp"
#include "llm/serve/llama_engine.hpp"
#include "llm/session/llama_session.hpp"
#include "options/placement_options.hpp"
#ifdef LOOM_HAVE_SERVE
#include "serve/http_server.hpp"
#endif

namespace loom::cli {
namespace {

struct ServeOptions {
  std::string model;
  std::string device;  // "": LOOM_DEVICES, else auto
  std::string host = "127.0.0.1";
  int64_t port = 8080;
  std::string api_key;  // "": $LOOM_API_KEY, else none
  int64_t timeout_s = 600;
  int64_t threads = 0;
  llm::serve::EngineOptions engine;
  PlacementOptions placement;
};

std::string parse_args(const ParsedOptions& p, ServeOptions* o) {
  o->model = p.text("--model");
  o->device = p.text("--device");
  o->host = p.text("--host", o->host);
  o->port = p.integer("--port", o->port);
  o->api_key = p.text("--api-key");
  o->timeout_s = p.integer("--timeout", o->timeout_s);
  o->threads = p.integer("--threads", o->threads);
  o->engine.slots = static_cast<int32_t>(p.integer("--parallel", o->engine.slots));
  o->engine.n_ctx = p.integer("--ctx", o->engine.n_ctx);
  o->engine.n_batch = p.integer("--batch", o->engine.n_batch);
  o->engine.max_queue = static_cast<int32_t>(p.integer("--max-queue", o->engine.max_queue));
  o->engine.mixed_step_ratio = p.number("--mixed-step-ratio", o->engine.mixed_step_ratio);
  o->engine.n_threads = static_cast<int>(o->threads);
  if (p.has("--kv-type")) parse_kv_type(p.text("--kv-type"), &o->engine.kv_type);
  o->placement = placement_of(p);
  return "";
}

#ifdef LOOM_HAVE_SERVE

// The context the model's load fits for: every slot's KV cache.
constexpr int64_t kFitContextPerSlot = 4096;

std::string url_of(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// What the loading thread leaves for the main one.
struct Loading {
  std::atomic<bool> finished{false};
  Status status;  // read after finished
  std::shared_ptr<llm::serve::Engine> engine;
};

// Loads the model, makes the engine and hands it to the server (on the
// loading thread).
void load(const ServeOptions& o, const ModelCommand& mc, serve::HttpServer* server, Loading* out) {
  auto result = [&]() -> StatusOr<std::shared_ptr<llm::serve::Engine>> {
    llm::SessionOptions so;
    so.n_ctx = o.engine.n_ctx > 0 ? o.engine.n_ctx : kFitContextPerSlot;
    so.n_seq = o.engine.slots;
    so.n_batch = std::max<int64_t>(o.engine.n_batch, o.engine.slots);  // as make_llama_engine
    so.kv_type = o.engine.kv_type;
    llm::LoadOptions lo;
    lo.devices = mc.devices;
    lo.progress = load_progress("loom serve");
    lo.n_gpu_layers = -1;  // layers where they fit (llm/placement/fit.hpp)
    lo.check_fit = true;
    lo.fit_session = llm::fit_session(so);
    if (std::string e = apply_placement(o.placement, mc.devices, &lo); !e.empty()) return invalid_argument(e);
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<llm::LlamaModel> model, llm::load_text_model(o.model, lo));
    const std::string id = std::filesystem::path(o.model).filename().string();
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<llm::serve::Engine> engine,
                          llm::serve::make_llama_engine(std::move(model), id, o.engine));
    return std::shared_ptr<llm::serve::Engine>(std::move(engine));
  }();
  if (result.ok()) {
    out->engine = std::move(result).value();
    const llm::serve::Engine& e = *out->engine;
    std::string on;
    for (const registry::Device* d : mc.devices) on += (on.empty() ? "" : ",") + d->name();
    std::fprintf(stderr, "loom serve: %s ready on %s: %d slots of %lld tokens, chat format %s\n", e.model_id().c_str(),
                 on.c_str(), o.engine.slots, static_cast<long long>(e.n_ctx_per_slot()), e.chat_format().c_str());
    server->set_engine(out->engine);
  } else {
    out->status = result.status();
  }
  out->finished = true;
}

// SIGINT and SIGTERM are taken by sigwait in the main thread: blocked here,
// before any thread starts, so every thread inherits the mask.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Waits for a stop signal or a failed load: the signal number, or 0.
int wait_for_stop(const sigset_t& set, const Loading& loading) {
  const timespec slice{0, 100 * 1000 * 1000};
  while (true) {
    const int sig = sigtimedwait(&set, nullptr, &slice);
    if (sig > 0) return sig;
    if (loading.finished && !loading.status.ok()) return 0;
  }
}

int run_server(const ServeOptions& o, const ModelCommand& mc, const sigset_t& signals) {
  serve::ServerOptions so;
  so.host = o.host;
  so.port = static_cast<int>(o.port);
  so.api_key = o.api_key;
  so.timeout_s = static_cast<int>(o.timeout_s);
  // A connection per running and queued request, and a few to spare
  // (health checks, metrics, tokenize); connections past that wait for one.
  constexpr int kMaxWorkers = 1024;
  so.worker_threads = std::min(kMaxWorkers, std::max(16, o.engine.slots + o.engine.max_queue + 8));
  auto server = serve::HttpServer::bind(so);
  if (!server.ok()) return fail("loom serve", server.status().message());
  if (Status st = (*server)->start(); !st.ok()) return fail("loom serve", st.message());
  std::printf("loom serve: listening on %s\n", url_of(o.host, (*server)->port()).c_str());
  std::fflush(stdout);

  Loading loading;
  std::thread loader([&] { load(o, mc, server->get(), &loading); });
  const int sig = wait_for_stop(signals, loading);
  if (!loading.finished) {
    // The load cannot be interrupted: close the socket and leave now.
    std::fprintf(stderr, "loom serve: %s while the model loads: exiting\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    (*server)->stop(0);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(0);
  }
  loader.join();
  if (!loading.status.ok()) {
    (*server)->stop(0);
    return fail("loom serve", loading.status.message());
  }
  std::fprintf(stderr, "loom serve: %s: refusing new requests, cancelling the running ones, stopping\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->begin_shutdown();
  loading.engine->shutdown(/*finish=*/false);
  (*server)->stop();
  return 0;
}

#endif  // LOOM_HAVE_SERVE

}  // namespace

int cmd_serve(std::vector<std::string> args) {
#ifndef LOOM_HAVE_SERVE
  (void)args;
  return fail("loom serve",
              "this loom was built without cpp-httplib, the HTTP library loom serve needs: install "
              "the Debian package "
              "libcpp-httplib-dev (apt-get install libcpp-httplib-dev), then configure and build "
              "loom again");
#else
  const sigset_t signals = stop_signals();
  ServeOptions o;
  ModelCommand mc;
  const int rc = start_model_command(
      "loom serve", kServe, args, [&](const ParsedOptions& p) { return parse_args(p, &o); }, &o.model, &o.device, true,
      &mc);
  if (rc >= 0) return rc;
  if (o.api_key.empty()) {
    if (const char* k = std::getenv("LOOM_API_KEY"); k != nullptr) o.api_key = k;
  }
  if (o.threads > 0) {
    Status st = llm::set_device_threads(mc.devices, static_cast<int>(o.threads));
    if (!st.ok()) return fail("loom serve", st.message());
  }
  return run_server(o, mc, signals);
#endif
}

}  // namespace loom::cli
