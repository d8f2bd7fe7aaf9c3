// `loom chat`: an interactive conversation on stdin/stdout in the model's
// chat format (tokenizer.chat_template, recognised by llm/chat_template).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "arg_parse.hpp"
#include "cli.hpp"
#include "placement_options.hpp"
#include "llm/chat.hpp"
#include "llm/llama_model.hpp"
#include "llm/llama_session.hpp"
#include "llm/model_open.hpp"

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
  llm::SamplerOptions sampling;
  PlacementOptions placement;
};

std::string parse_args(const std::vector<std::string>& args, ChatOptions* o) {
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  o->sampling.temperature = 0.0f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    static const char* const kValued[] = {"-m", "--model", "--device", "-sys", "--system", "--chat-format", "-n",
                                          "--n-predict", "-c", "--ctx", "-t", "--threads", "--temp", "--top-k",
                                          "--top-p", "-s", "--seed"};
    bool valued = is_placement_flag(a);
    for (const char* k : kValued) valued = valued || a == k;
    if (!valued) return "unexpected argument '" + a + "'";
    if (i + 1 >= args.size()) return a + " needs a value";
    const std::string v = args[++i];
    auto bad = [&](const char* want) { return a + " '" + v + "': expected " + want; };
    int64_t n = 0;
    double f = 0;
    if (is_placement_flag(a)) {
      if (std::string e = take_placement_flag(a, v, &o->placement); !e.empty()) return e;
    } else if (a == "-m" || a == "--model") {
      o->model = v;
    } else if (a == "--device") {
      o->device = v;
    } else if (a == "-sys" || a == "--system") {
      o->system = v;
    } else if (a == "--chat-format") {
      o->format = v;
    } else if (a == "-n" || a == "--n-predict") {
      if (!parse_int(v, 1, kMaxInt, &o->n_predict)) return bad("an integer >= 1");
    } else if (a == "-c" || a == "--ctx") {
      if (!parse_int(v, 1, kMaxInt, &o->n_ctx)) return bad("an integer >= 1");
    } else if (a == "-t" || a == "--threads") {
      if (!parse_int(v, 1, 1024, &o->threads)) return bad("an integer in [1, 1024]");
    } else if (a == "--temp") {
      if (!parse_float(v, 0.0, 1e6, &f)) return bad("a number >= 0 (0: greedy)");
      o->sampling.temperature = static_cast<float>(f);
    } else if (a == "--top-k") {
      if (!parse_int(v, 0, kMaxInt, &n)) return bad("an integer >= 0");
      o->sampling.top_k = static_cast<int32_t>(n);
    } else if (a == "--top-p") {
      if (!parse_float(v, 0.0, 1.0, &f) || f == 0.0) return bad("a number in (0, 1]");
      o->sampling.top_p = static_cast<float>(f);
    } else {  // -s / --seed
      if (!parse_int(v, 0, std::numeric_limits<uint32_t>::max(), &n)) return bad("an integer in [0, 2^32)");
      o->sampling.seed = static_cast<uint32_t>(n);
    }
  }
  return "";
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "loom chat: %s\n", msg.c_str());
  return 1;
}

// The format: --chat-format, else the file's template, else plain (warned).
StatusOr<llm::ChatFormat> choose_format(const ChatOptions& o, const GgufFile& file) {
  if (!o.format.empty()) {
    for (int i = 0; i <= static_cast<int>(llm::ChatFormat::kZephyr); ++i) {
      const auto f = static_cast<llm::ChatFormat>(i);
      if (o.format == llm::chat_format_name(f)) return f;
    }
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
      "loom chat", args, [&](const std::vector<std::string>& a) { return parse_args(a, &o); }, &o.model, &o.device,
      true, &mc);
  if (rc >= 0) return rc;
  if (o.threads > 0) {
    Status st = llm::set_device_threads(mc.devices, static_cast<int>(o.threads));
    if (!st.ok()) return fail(st.message());
  }
  llm::SessionOptions so;
  so.n_ctx = o.n_ctx;
  llm::LoadOptions lo;
  lo.devices = mc.devices;
  lo.progress = load_progress("loom chat");
  lo.n_gpu_layers = -1;  // layers where they fit (llm/fit.hpp)
  lo.check_fit = true;
  lo.fit_session = llm::fit_session(so);
  if (std::string e = apply_placement(o.placement, mc.devices, &lo); !e.empty()) return fail(e);
  auto model = llm::load_text_model(o.model, lo);
  if (!model.ok()) return fail(model.status().message());
  const llm::Tokenizer* tok = (*model)->tokenizer();
  auto format = choose_format(o, (*model)->file());
  if (!format.ok()) return fail(format.status().message());
  auto session = llm::LlamaSession::create(model->get(), so);
  if (!session.ok()) return fail(session.status().message());
  auto chat = llm::Chat::create(session->get(), tok, llm::ChatTemplate(*format), o.system, o.sampling);
  if (!chat.ok()) return fail(chat.status().message());

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
    if (!reply.ok()) return fail(reply.status().message());
    if (reply->context_full) return fail("the context of " + std::to_string((*session)->n_ctx()) +
                                         " tokens is full; start a new chat or raise --ctx");
  }
  return 0;
}

}  // namespace loom::cli
