#include "serve/openai_request.hpp"

#include <cmath>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "llm/serve/engine.hpp"

namespace loom::cli::serve {
namespace {

using nlohmann::json;

// Reads the fields of one body; the first bad one stops it.
class Reader {
 public:
  explicit Reader(std::string* param) : param_(param) {}

  // The body as a JSON object, or an error.
  Status object(std::string_view body, json* out) {
    *out = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (out->is_discarded()) return fail("", "the body is not valid JSON");
    if (!out->is_object()) return fail("", "the body must be a JSON object, got " + type_of(*out));
    return Status();
  }

  Status fail(const std::string& param, const std::string& what) {
    *param_ = param;
    return invalid_argument("[serve.request] " + (param.empty() ? what : param + ": " + what));
  }

  static std::string type_of(const json& v) {
    if (v.is_number_float()) return "a number";
    if (v.is_number()) return "an integer";
    const std::string t = v.type_name();
    return (t == "object" || t == "array" ? "an " : "a ") + t;
  }

  // Whether the body has the field with a value other than null.
  static const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  }

  // An integer in [lo, hi] (given as a JSON integer).
  Status integer(const json& v, const std::string& name, int64_t lo, int64_t hi, int64_t* out) {
    const std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi)) return fail(name, "expected " + range + ", got " + std::to_string(u));
      *out = static_cast<int64_t>(u);
      return Status();
    }
    if (!v.is_number_integer()) return fail(name, "expected " + range + ", got " + type_of(v));
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) return fail(name, "expected " + range + ", got " + std::to_string(i));
    *out = i;
    return Status();
  }

  // A finite number in [lo, hi].
  Status number(const json& v, const std::string& name, double lo, double hi, double* out) {
    std::string range = "a number in [" + trim_number(lo) + ", " + trim_number(hi) + "]";
    if (!v.is_number()) return fail(name, "expected " + range + ", got " + type_of(v));
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) return fail(name, "expected " + range + ", got " + v.dump());
    *out = d;
    return Status();
  }

  Status boolean(const json& v, const std::string& name, bool* out) {
    if (!v.is_boolean()) return fail(name, "expected true or false, got " + type_of(v));
    *out = v.get<bool>();
    return Status();
  }

  Status string(const json& v, const std::string& name, std::string* out) {
    if (!v.is_string()) return fail(name, "expected a string, got " + type_of(v));
    *out = v.get<std::string>();
    return Status();
  }

 private:
  static std::string trim_number(double d) {
    std::string s = std::to_string(d);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

  std::string* param_;
};

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// A message's content: a string, or an array of {"type": "text", "text": ...}
// parts (joined); null reads as "".
Status message_content(Reader& r, const json& m, const std::string& name, std::string* out) {
  const json* c = Reader::field(m, "content");
  if (c == nullptr) return Status();
  if (c->is_string()) return r.string(*c, name, out);
  if (!c->is_array()) return r.fail(name, "expected a string or an array of text parts, got " + Reader::type_of(*c));
  for (size_t i = 0; i < c->size(); ++i) {
    const json& part = (*c)[i];
    const std::string pname = name + "[" + std::to_string(i) + "]";
    if (!part.is_object()) return r.fail(pname, "expected a content part object, got " + Reader::type_of(part));
    const json* type = Reader::field(part, "type");
    std::string t;
    if (type == nullptr) return r.fail(pname + ".type", "missing (only \"text\" parts are supported)");
    LOOM_RETURN_IF_ERROR(r.string(*type, pname + ".type", &t));
    if (t != "text") return r.fail(pname + ".type", "only \"text\" parts are supported, got \"" + t + "\"");
    const json* text = Reader::field(part, "text");
    if (text == nullptr) return r.fail(pname + ".text", "missing");
    std::string s;
    LOOM_RETURN_IF_ERROR(r.string(*text, pname + ".text", &s));
    *out += s;
  }
  return Status();
}

Status parse_messages(Reader& r, const json& body, OpenAiRequest* out) {
  const json* ms = Reader::field(body, "messages");
  if (ms == nullptr) return r.fail("messages", "missing (a chat request needs an array of messages)");
  if (!ms->is_array()) return r.fail("messages", "expected an array of messages, got " + Reader::type_of(*ms));
  if (ms->empty()) return r.fail("messages", "the array is empty (at least one message is needed)");
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    const std::string name = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return r.fail(name, "expected a message object, got " + Reader::type_of(m));
    ChatMessage msg;
    const json* role = Reader::field(m, "role");
    if (role == nullptr) return r.fail(name + ".role", "missing");
    LOOM_RETURN_IF_ERROR(r.string(*role, name + ".role", &msg.role));
    if (msg.role == "developer") msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant") {
      return r.fail(name + ".role", "expected \"system\", \"user\" or \"assistant\", got \"" + msg.role + "\"");
    }
    LOOM_RETURN_IF_ERROR(message_content(r, m, name + ".content", &msg.content));
    out->messages.push_back(std::move(msg));
  }
  return Status();
}

// prompt: a string, an array holding one string, or an array of token ids.
Status parse_prompt(Reader& r, const json& body, OpenAiRequest* out) {
  const json* p = Reader::field(body, "prompt");
  if (p == nullptr) return r.fail("prompt", "missing (a completion request needs a prompt)");
  if (p->is_string()) return r.string(*p, "prompt", &out->prompt);
  if (!p->is_array()) {
    return r.fail("prompt", "expected a string or an array of token ids, got " + Reader::type_of(*p));
  }
  if (p->size() == 1 && (*p)[0].is_string()) return r.string((*p)[0], "prompt", &out->prompt);
  if (!p->empty() && (*p)[0].is_array()) return r.fail("prompt", "a batch of prompts is not supported (one per request)");
  if (p->size() > 1 && (*p)[0].is_string()) {
    return r.fail("prompt", "a batch of " + std::to_string(p->size()) + " prompts is not supported (one per request)");
  }
  out->prompt_is_ids = true;
  for (size_t i = 0; i < p->size(); ++i) {
    int64_t id = 0;
    LOOM_RETURN_IF_ERROR(r.integer((*p)[i], "prompt[" + std::to_string(i) + "]", 0, kMaxInt32, &id));
    out->prompt_ids.push_back(static_cast<llm::TokenId>(id));
  }
  return Status();
}

Status parse_stop(Reader& r, const json& body, OpenAiRequest* out) {
  const json* s = Reader::field(body, "stop");
  if (s == nullptr) return Status();
  auto one = [&](const json& v, const std::string& name) -> Status {
    std::string text;
    LOOM_RETURN_IF_ERROR(r.string(v, name, &text));
    if (text.empty()) return r.fail(name, "an empty stop string");
    out->stop.push_back(std::move(text));
    return Status();
  };
  if (s->is_string()) return one(*s, "stop");
  if (!s->is_array()) return r.fail("stop", "expected a string or an array of strings, got " + Reader::type_of(*s));
  if (s->size() > kMaxStop) {
    return r.fail("stop", "at most " + std::to_string(kMaxStop) + " stop strings, got " + std::to_string(s->size()));
  }
  for (size_t i = 0; i < s->size(); ++i) LOOM_RETURN_IF_ERROR(one((*s)[i], "stop[" + std::to_string(i) + "]"));
  return Status();
}

Status parse_sampling(Reader& r, const json& body, OpenAiRequest* out) {
  llm::SamplerOptions& s = out->sampling;
  s.temperature = 1.0f;
  s.top_p = 1.0f;
  s.top_k = 0;
  if (const json* v = Reader::field(body, "temperature")) {
    double t = 0;
    LOOM_RETURN_IF_ERROR(r.number(*v, "temperature", 0, 2, &t));
    s.temperature = static_cast<float>(t);
  }
  if (const json* v = Reader::field(body, "top_p")) {
    double p = 0;
    LOOM_RETURN_IF_ERROR(r.number(*v, "top_p", 0, 1, &p));
    if (p > 0) {
      s.top_p = static_cast<float>(p);
    } else {
      s.top_k = 1;  // the smallest set reaching probability 0: the most likely token
    }
  }
  if (const json* v = Reader::field(body, "top_k")) {
    int64_t k = 0;
    LOOM_RETURN_IF_ERROR(r.integer(*v, "top_k", 0, kMaxInt32, &k));
    if (s.top_k != 1) s.top_k = static_cast<int32_t>(k);
  }
  if (const json* v = Reader::field(body, "seed")) {
    int64_t seed = 0;
    // OpenAI's seed is any 64-bit integer; the sampler takes 32 bits.
    if (v->is_number_integer() && !v->is_number_unsigned()) {
      LOOM_RETURN_IF_ERROR(r.integer(*v, "seed", std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max(), &seed));
      s.seed = static_cast<uint32_t>(static_cast<uint64_t>(seed));
    } else if (v->is_number_unsigned()) {
      s.seed = static_cast<uint32_t>(v->get<uint64_t>());
    } else {
      return r.fail("seed", "expected an integer, got " + Reader::type_of(*v));
    }
  } else {
    std::random_device rd;
    s.seed = rd();
  }
  return Status();
}

Status parse_counts(Reader& r, const json& body, OpenAiRequest* out) {
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (const json* v = Reader::field(body, name)) {
      LOOM_RETURN_IF_ERROR(r.integer(*v, name, 0, kMaxInt32, &out->max_tokens));
    }
  }
  if (const json* v = Reader::field(body, "n")) {
    int64_t n = 0;
    LOOM_RETURN_IF_ERROR(r.integer(*v, "n", 1, kMaxInt32, &n));
    if (n != 1) return r.fail("n", "only n = 1 is supported, got " + std::to_string(n));
  }
  return Status();
}

// Chat: logprobs (bool) and top_logprobs (0..20, needs logprobs true);
// completion: logprobs (0..20).
Status parse_logprobs(Reader& r, const json& body, OpenAiRequest* out) {
  const json* lp = Reader::field(body, "logprobs");
  const int64_t most = llm::serve::kMaxTopLogprobs;
  if (out->endpoint == Endpoint::kCompletion) {
    if (lp == nullptr) return Status();
    int64_t n = 0;
    LOOM_RETURN_IF_ERROR(r.integer(*lp, "logprobs", 0, most, &n));
    out->logprobs = static_cast<int32_t>(n);
    return Status();
  }
  bool want = false;
  if (lp != nullptr) LOOM_RETURN_IF_ERROR(r.boolean(*lp, "logprobs", &want));
  int64_t top = 0;
  if (const json* t = Reader::field(body, "top_logprobs")) {
    LOOM_RETURN_IF_ERROR(r.integer(*t, "top_logprobs", 0, most, &top));
    if (!want) return r.fail("top_logprobs", "needs \"logprobs\": true");
  }
  if (want) out->logprobs = static_cast<int32_t>(top);
  return Status();
}

Status parse_streaming(Reader& r, const json& body, OpenAiRequest* out) {
  if (const json* v = Reader::field(body, "stream")) LOOM_RETURN_IF_ERROR(r.boolean(*v, "stream", &out->stream));
  if (const json* v = Reader::field(body, "ignore_eos")) {
    LOOM_RETURN_IF_ERROR(r.boolean(*v, "ignore_eos", &out->ignore_eos));
  }
  if (const json* so = Reader::field(body, "stream_options")) {
    if (!so->is_object()) return r.fail("stream_options", "expected an object, got " + Reader::type_of(*so));
    if (const json* v = Reader::field(*so, "include_usage")) {
      LOOM_RETURN_IF_ERROR(r.boolean(*v, "stream_options.include_usage", &out->include_usage));
    }
  }
  return Status();
}

}  // namespace

StatusOr<OpenAiRequest> parse_openai_request(Endpoint endpoint, std::string_view body, std::string* param) {
  std::string ignored;
  Reader r(param ? param : &ignored);
  json j;
  LOOM_RETURN_IF_ERROR(r.object(body, &j));
  OpenAiRequest out;
  out.endpoint = endpoint;
  if (const json* m = Reader::field(j, "model")) LOOM_RETURN_IF_ERROR(r.string(*m, "model", &out.model));
  if (endpoint == Endpoint::kChat) {
    LOOM_RETURN_IF_ERROR(parse_messages(r, j, &out));
  } else {
    LOOM_RETURN_IF_ERROR(parse_prompt(r, j, &out));
  }
  LOOM_RETURN_IF_ERROR(parse_counts(r, j, &out));
  LOOM_RETURN_IF_ERROR(parse_sampling(r, j, &out));
  LOOM_RETURN_IF_ERROR(parse_stop(r, j, &out));
  LOOM_RETURN_IF_ERROR(parse_streaming(r, j, &out));
  LOOM_RETURN_IF_ERROR(parse_logprobs(r, j, &out));
  return out;
}

StatusOr<TokenizeRequest> parse_tokenize_request(std::string_view body, std::string* param) {
  std::string ignored;
  Reader r(param ? param : &ignored);
  json j;
  LOOM_RETURN_IF_ERROR(r.object(body, &j));
  TokenizeRequest out;
  const json* c = Reader::field(j, "content");
  if (c == nullptr) return r.fail("content", "missing (the text to tokenize)");
  LOOM_RETURN_IF_ERROR(r.string(*c, "content", &out.content));
  if (const json* v = Reader::field(j, "add_special")) LOOM_RETURN_IF_ERROR(r.boolean(*v, "add_special", &out.add_special));
  return out;
}

StatusOr<std::vector<llm::TokenId>> parse_detokenize_request(std::string_view body, int32_t n_vocab,
                                                             std::string* param) {
  std::string ignored;
  Reader r(param ? param : &ignored);
  json j;
  LOOM_RETURN_IF_ERROR(r.object(body, &j));
  const json* t = Reader::field(j, "tokens");
  if (t == nullptr) return r.fail("tokens", "missing (an array of token ids)");
  if (!t->is_array()) return r.fail("tokens", "expected an array of token ids, got " + Reader::type_of(*t));
  std::vector<llm::TokenId> ids;
  ids.reserve(t->size());
  for (size_t i = 0; i < t->size(); ++i) {
    int64_t id = 0;
    LOOM_RETURN_IF_ERROR(r.integer((*t)[i], "tokens[" + std::to_string(i) + "]", 0, int64_t{n_vocab} - 1, &id));
    ids.push_back(static_cast<llm::TokenId>(id));
  }
  return ids;
}

std::string bearer_token(std::string_view h) {
  auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!h.empty() && space(h.front())) h.remove_prefix(1);
  while (!h.empty() && space(h.back())) h.remove_suffix(1);
  constexpr std::string_view kScheme = "bearer";
  if (h.size() <= kScheme.size() || !space(h[kScheme.size()])) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    const char c = h[i] >= 'A' && h[i] <= 'Z' ? static_cast<char>(h[i] - 'A' + 'a') : h[i];
    if (c != kScheme[i]) return "";
  }
  h.remove_prefix(kScheme.size());
  while (!h.empty() && space(h.front())) h.remove_prefix(1);
  return std::string(h);
}

bool constant_time_equal(std::string_view given, std::string_view expected) {
  // Every byte of `expected` is compared, whatever `given` holds: the time
  // depends on the server's key length only.
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff = static_cast<unsigned char>(diff | (g ^ static_cast<unsigned char>(expected[i])));
  }
  return diff == 0;
}

bool authorization_matches(std::string_view authorization, std::string_view key) {
  const std::string token = bearer_token(authorization);
  return constant_time_equal(token, key) && !key.empty();
}

}  // namespace loom::cli::serve
