// `loom profile`: run a ReLU-FFN model densely over a text, count per layer
// how many tokens each FFN neuron fired for (gate pre-activation > 0) and
// write the shares as blk.N.ffn_freq (F32 [n_ff]) into a small GGUF: the
// profile hot/cold placement ranks neurons by (`loom run --sparse-budget B
// --sparse-profile FILE`, docs/sparse-ffn.md) for models that ship none.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "json.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/model/model_open.hpp"
#include "llm/session/llama_session.hpp"
#include "llm/sparse/sparse_ffn.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "options/arg_parse.hpp"

namespace loom::cli {
namespace {

struct ProfileOptions {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  std::string output;  // "": <model>.ffn_freq.gguf
  std::string device;
  int64_t n_ctx = 0;   // 0: min(training context, 512)
  int64_t n_batch = 32;
};

// The options (checked by the option table) into *o.
std::string parse_args(const ParsedOptions& p, ProfileOptions* o) {
  o->model = p.text("--model");
  o->prompt = p.text("--prompt");
  o->prompt_file = p.text("--file");
  o->output = p.text("--output");
  o->device = p.text("--device");
  o->n_ctx = p.integer("--ctx", o->n_ctx);
  o->n_batch = p.integer("--batch", o->n_batch);
  return "";
}

// A GGUF v3 file with string / u64 metadata and 1-D F32 tensors.
class GgufOut {
 public:
  void kv_str(const std::string& key, const std::string& v) {
    str(&kv_, key);
    u32(&kv_, 8);
    str(&kv_, v);
    ++n_kv_;
  }
  void kv_u64(const std::string& key, uint64_t v) {
    str(&kv_, key);
    u32(&kv_, 10);
    u64(&kv_, v);
    ++n_kv_;
  }
  void tensor_f32(const std::string& name, const std::vector<float>& v) {
    str(&info_, name);
    u32(&info_, 1);
    u64(&info_, v.size());
    u32(&info_, 0);  // F32
    u64(&info_, data_.size());
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    data_.insert(data_.end(), p, p + v.size() * sizeof(float));
    data_.resize((data_.size() + kAlign - 1) / kAlign * kAlign, 0);
    ++n_tensors_;
  }
  bool write(const std::string& path) const {
    std::vector<uint8_t> out;
    out.insert(out.end(), {'G', 'G', 'U', 'F'});
    u32(&out, 3);
    u64(&out, n_tensors_);
    u64(&out, n_kv_);
    out.insert(out.end(), kv_.begin(), kv_.end());
    out.insert(out.end(), info_.begin(), info_.end());
    out.resize((out.size() + kAlign - 1) / kAlign * kAlign, 0);
    out.insert(out.end(), data_.begin(), data_.end());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
    return std::fclose(f) == 0 && ok;
  }

 private:
  static constexpr size_t kAlign = 32;  // GGUF's default general.alignment
  static void u32(std::vector<uint8_t>* b, uint32_t v) {
    for (int i = 0; i < 4; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void u64(std::vector<uint8_t>* b, uint64_t v) {
    for (int i = 0; i < 8; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void str(std::vector<uint8_t>* b, const std::string& s) {
    u64(b, s.size());
    b->insert(b->end(), s.begin(), s.end());
  }
  std::vector<uint8_t> kv_, info_, data_;
  uint64_t n_kv_ = 0, n_tensors_ = 0;
};

}  // namespace

int cmd_profile(std::vector<std::string> args) {
  ProfileOptions o;
  ModelCommand mc;
  const int rc = start_model_command(
      "loom profile", kProfile, args, [&](const ParsedOptions& p) { return parse_args(p, &o); }, &o.model,
      &o.device, true, &mc);
  if (rc >= 0) return rc;
  if (!o.prompt_file.empty() && !read_text(o.prompt_file, &o.prompt)) {
    return fail("loom profile", "cannot read the text from '" + o.prompt_file + "'");
  }
  if (o.prompt.empty())
    return fail("loom profile", "no text to profile on: give -p TEXT or -f FILE");
  if (o.output.empty()) {
    const std::string stem = o.model.size() > 5 && o.model.compare(o.model.size() - 5, 5, ".gguf") == 0
                                 ? o.model.substr(0, o.model.size() - 5)
                                 : o.model;
    o.output = stem + ".ffn_freq.gguf";
  }
  llm::LoadOptions lo;
  lo.devices = mc.devices;
  lo.sparse = false;  // every layer dense: every neuron's gate computed
  auto model = llm::load_text_model(o.model, lo);
  if (!model.ok()) return fail("loom profile", model.status().message());
  llm::LlamaModel& m = **model;
  if (m.sparse_params().activation != llm::FfnActivation::kRelu) {
    return fail(
        "loom profile",
        o.model +
            ": the FFN activation is not relu (<arch>.feed_forward_activation): a neuron-firing "
            "profile needs a ReLU FFN");
  }
  const std::vector<llm::TokenId> tokens = m.tokenizer()->encode(o.prompt, true);
  if (tokens.size() < 2)
    return fail("loom profile", "the text gives " + std::to_string(tokens.size()) +
                                    " token(s): too few to profile");
  llm::SessionOptions so;
  so.n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(m.hparams().n_ctx_train, 512);
  so.n_batch = o.n_batch;
  so.count_ffn_activity = true;
  auto session = llm::LlamaSession::create(&m, so);
  if (!session.ok()) return fail("loom profile", session.status().message());
  llm::LlamaSession& s = **session;
  // Windows of the context's length, each from an empty cache.
  std::vector<float> logits;
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(s.n_ctx())) {
    const size_t end = std::min(tokens.size(), start + static_cast<size_t>(s.n_ctx()));
    s.reset();
    Status st = s.eval(std::vector<llm::TokenId>(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                                                 tokens.begin() + static_cast<std::ptrdiff_t>(end)),
                       false, &logits);
    if (!st.ok()) return fail("loom profile", st.message());
  }
  const uint64_t n_tok = s.ffn_tokens_counted();
  GgufOut out;
  out.kv_str("general.type", "loom.ffn_profile");
  out.kv_str("loom.profile.model", o.model);
  out.kv_u64("loom.profile.tokens", n_tok);
  Json layers = Json::array();
  const auto& counts = s.ffn_activity();
  for (size_t il = 0; il < counts.size(); ++il) {
    if (counts[il].empty()) continue;
    std::vector<float> freq(counts[il].size());
    double fired = 0;
    for (size_t j = 0; j < freq.size(); ++j) {
      freq[j] = static_cast<float>(static_cast<double>(counts[il][j]) / static_cast<double>(n_tok));
      fired += static_cast<double>(counts[il][j]);
    }
    std::vector<float> sorted = freq;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    double hot = 0;
    for (size_t j = 0; j < std::max<size_t>(1, sorted.size() / 5); ++j) hot += sorted[j];
    const double sparsity = 1.0 - fired / (static_cast<double>(n_tok) * static_cast<double>(freq.size()));
    const double hot_share = fired > 0 ? hot * static_cast<double>(n_tok) / fired : 0.0;
    out.tensor_f32("blk." + std::to_string(il) + ".ffn_freq", freq);
    if (mc.common.json) {
      layers.push_back({{"layer", il}, {"sparsity", sparsity}, {"hot20_share", hot_share}});
    } else {
      std::fprintf(stderr, "layer %zu: sparsity %.3f (hot 20%% of neurons: %.2f of firings)\n", il, sparsity, hot_share);
    }
  }
  if (counts.empty()) return fail("loom profile", "no layer ran dense: nothing counted");
  if (!out.write(o.output))
    return fail("loom profile", "cannot write " + o.output + ": " + std::strerror(errno));
  if (mc.common.json) {
    Json j;
    j["model"] = o.model;
    j["output"] = o.output;
    j["tokens"] = n_tok;
    j["layers"] = layers;
    put_json(j);
  } else {
    std::fprintf(stderr, "loom profile: %s: %llu tokens, %zu layers -> %s\n", o.model.c_str(),
                 static_cast<unsigned long long>(n_tok), counts.size(), o.output.c_str());
  }
  return 0;
}

}  // namespace loom::cli
