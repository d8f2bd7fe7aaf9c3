// `loom chat`: an interactive conversation on stdin/stdout in the model's
// chat format (tokenizer.chat_template, recognised by llm/chat/chat_template).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "llm/chat/chat.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/model/model_open.hpp"
#include "llm/session/llama_session.hpp"
#include "options/placement_options.hpp"

namespace loom::cli {
namespace {

struct ChatOptions {
  std::string model;
  std::string device;  // "": LOOM_DEVICES, else cpu
  std::string system;
  std::string format;  // "": from the file
  int64_t n_predict = 512;
  int64_t n_ctx = 0;
  int64_t threads = 0;
  loom_type_t kv_type = llm::SessionOptions().kv_type;
  llm::SamplerOptions sampling;
  PlacementOptions placement;
};

// The options (checked by the option table) into *o.
std::string parse_args(const ParsedOptions& p, ChatOptions* o) {
  o->model = p.text("--model");
  o->device = p.text("--device");
  o->system = p.text("--system");
  o->format = p.text("--chat-format");
  o->n_predict = p.integer("--n-predict", o->n_predict);
  o->n_ctx = p.integer("--ctx", o->n_ctx);
  o->threads = p.integer("--threads", o->threads);
  if (p.has("--kv-type")) parse_kv_type(p.text("--kv-type"), &o->kv_type);
  o->placement = placement_of(p);
  o->sampling.temperature = static_cast<float>(p.number("--temp", 0.0));
  o->sampling.top_k = static_cast<int32_t>(p.integer("--top-k", o->sampling.top_k));
  o->sampling.top_p = static_cast<float>(p.number("--top-p", o->sampling.top_p));
  o->sampling.seed = static_cast<uint32_t>(p.integer("--seed", o->sampling.seed));
  return "";
}

// The format: --chat-format, else the file's template, else plain (warned).
StatusOr<llm::ChatFormat> choose_format(const ChatOptions& o, const GgufFile& file) {
  if (!o.format.empty()) {
    llm::ChatFormat f;
    if (llm::chat_format_from_name(o.format, &f)) return f;
    return invalid_argument("--chat-format " + o.format + ": not one of plain, " + llm::chat_format_names());
  }
  std::string_view jinja;
  if (auto t = file.get_str("tokenizer.chat_template"); t.ok()) jinja = *t;
  const llm::ChatFormat f = llm::detect_chat_format(jinja);
  if (f == llm::ChatFormat::kPlain) {
    std::fprintf(stderr, "loom chat: %s; using plain text turns (\"User: ...\\nAssistant:\"). Recognised: %s; "
                         "--chat-format picks one\n",
                 jinja.empty() ? "the model has no chat template (tokenizer.chat_template)"
                               : "the model's chat template is not one loom recognises",
                 llm::chat_format_names().c_str());
  }
  return f;
}

}  // namespace

int cmd_chat(std::vector<std::string> args) {
  ChatOptions o;
  ModelCommand mc;
  const int rc = start_model_command(
      "loom chat", kChat, args, [&](const ParsedOptions& p) { return parse_args(p, &o); }, &o.model, &o.device, true,
      &mc);
  if (rc >= 0) return rc;
  if (o.threads > 0) {
    Status st = llm::set_device_threads(mc.devices, static_cast<int>(o.threads));
    if (!st.ok()) return fail("loom chat", st.message());
  }
  llm::SessionOptions so;
  so.n_ctx = o.n_ctx;
  so.kv_type = o.kv_type;
  llm::LoadOptions lo;
  lo.devices = mc.devices;
  lo.progress = load_progress("loom chat");
  lo.n_gpu_layers = -1;  // layers where they fit (llm/placement/fit.hpp)
  lo.check_fit = true;
  lo.fit_session = llm::fit_session(so);
  if (std::string e = apply_placement(o.placement, mc.devices, &lo); !e.empty())
    return fail("loom chat", e);
  auto model = llm::load_text_model(o.model, lo);
  if (!model.ok()) return fail("loom chat", model.status().message());
  const llm::Tokenizer* tok = (*model)->tokenizer();
  auto format = choose_format(o, (*model)->file());
  if (!format.ok()) return fail("loom chat", format.status().message());
  auto session = llm::LlamaSession::create(model->get(), so);
  if (!session.ok()) return fail("loom chat", session.status().message());
  auto chat = llm::Chat::create(session->get(), tok, llm::ChatTemplate(*format), o.system, o.sampling);
  if (!chat.ok()) return fail("loom chat", chat.status().message());

  const bool tty = ::isatty(0) && ::isatty(1);
  std::fprintf(stderr, "loom chat: %s, format %s, context %lld tokens; /exit or end of input to quit\n",
               o.model.c_str(), llm::chat_format_name(*format), static_cast<long long>((*session)->n_ctx()));
  std::string line;
  while (true) {
    if (tty) std::fputs("> ", stdout), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line.empty()) continue;
    auto reply = chat->send(line, static_cast<int32_t>(o.n_predict), [](const std::string& piece) {
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
    });
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (!reply.ok()) return fail("loom chat", reply.status().message());
    if (reply->context_full)
      return fail("loom chat", "the context of " + std::to_string((*session)->n_ctx()) +
                                   " tokens is full; start a new chat or raise --ctx");
  }
  return 0;
}

}  // namespace loom::cli
