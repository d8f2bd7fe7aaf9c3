// llama on the CPU device: stories260K greedy text from BOS (the model
// author's published output), batched prefill vs token-by-token logits, and
// loader errors on small hand-written GGUFs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "gguf/gguf_writer.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/registry/registry.hpp"
#include "tiny_llama.hpp"

namespace loom::llm {
namespace {

using test::kPublished;
using test::stories_path;

registry::Device* cpu_device(registry::Registry& reg) { return reg.device("cpu"); }

std::unique_ptr<registry::Registry> load_registry() {
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR};
  o.use_env = false;
  return registry::Registry::load(o);
}

class StoriesModel : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = stories_path();
    if (!std::ifstream(path_).good()) {
      GTEST_SKIP() << path_ << " not found (set LOOM_MODELS_DIR to the folder holding stories260K.gguf)";
    }
    reg_ = load_registry();
    dev_ = cpu_device(*reg_);
    ASSERT_NE(dev_, nullptr) << "no cpu device";
    auto m = LlamaModel::load(path_, dev_);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<Tokenizer>(std::move(t).value());
  }
  std::string path_;
  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(StoriesModel, HparamsAndZeroCopyWeights) {
  const LlamaHparams& h = model_->hparams();
  EXPECT_EQ(h.n_vocab, 512);
  EXPECT_EQ(h.n_embd, 64);
  EXPECT_EQ(h.n_layer, 5);
  EXPECT_EQ(h.n_head, 8);
  EXPECT_EQ(h.n_head_kv, 4);
  EXPECT_EQ(h.n_ff, 172);
  EXPECT_EQ(h.n_rot, 8);
  EXPECT_TRUE(model_->zero_copy());  // the cpu device reads the mapping directly
  EXPECT_EQ(model_->tok_embd->data,
            static_cast<const void*>(model_->file().find_tensor("token_embd.weight")->data));
}

// Default session options: the F16 KV cache.
TEST_F(StoriesModel, GreedyFromBosTellsTheStory) {
  auto s = LlamaSession::create(model_.get(), {});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  GenerateOptions opt;
  opt.n_predict = 100;
  auto r = generate(**s, *tok_, "", opt);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->prompt_tokens, std::vector<TokenId>{1});
  EXPECT_EQ(r->text.rfind(kPublished, 0), 0u) << r->text;
}

// The default cache is F16 (above); an F32 cache tells the same story.
TEST_F(StoriesModel, F32KvCacheTellsTheStory) {
  SessionOptions o;
  o.kv_type = LOOM_TYPE_F32;
  auto s = LlamaSession::create(model_.get(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  GenerateOptions opt;
  opt.n_predict = 100;
  auto r = generate(**s, *tok_, "", opt);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->text.rfind(kPublished, 0), 0u) << r->text;
}

TEST_F(StoriesModel, StreamedPiecesMakeTheText) {
  auto s = LlamaSession::create(model_.get(), {});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  GenerateOptions opt;
  opt.n_predict = 20;
  std::string streamed;
  auto r = generate(**s, *tok_, "Once upon a time", opt, [&](const std::string& p) {
    streamed += p;
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(streamed, r->text);
  EXPECT_EQ(r->generated_tokens.size(), 20u);
  EXPECT_EQ(r->text.rfind(",", 0), 0u) << r->text;  // "Once upon a time, there was ..."
}

TEST_F(StoriesModel, BatchedPrefillMatchesTokenByToken) {
  const std::vector<TokenId> prompt = tok_->encode("Once upon a time, there was a little dog named Max.", true);
  ASSERT_GT(prompt.size(), 8u);
  const auto n_vocab = static_cast<size_t>(model_->hparams().n_vocab);

  // An F32 cache: batched and single-token matmuls differ in the last f32
  // bits, which an F16 cache can turn into one half's step (1e-3).
  SessionOptions f32;
  f32.kv_type = LOOM_TYPE_F32;
  std::vector<float> batched;
  {
    SessionOptions o = f32;
    o.n_batch = 64;
    auto s = LlamaSession::create(model_.get(), o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_TRUE((*s)->eval(prompt, true, &batched).ok());
  }
  std::vector<float> single;
  {
    auto s = LlamaSession::create(model_.get(), f32);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    for (TokenId t : prompt) {
      std::vector<float> l;
      Status st = (*s)->eval({t}, false, &l);
      ASSERT_TRUE(st.ok()) << st.to_string();
      single.insert(single.end(), l.begin(), l.end());
    }
  }
  ASSERT_EQ(batched.size(), prompt.size() * n_vocab);
  ASSERT_EQ(single.size(), batched.size());
  double max_diff = 0;
  for (size_t i = 0; i < batched.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(batched[i] - single[i])));
  EXPECT_LT(max_diff, 1e-4) << "max abs diff of " << prompt.size() << " x " << n_vocab << " logits";

  // Batches of 3 (a ragged split) give the same last-token logits.
  SessionOptions o3 = f32;
  o3.n_batch = 3;
  auto s3 = LlamaSession::create(model_.get(), o3);
  ASSERT_TRUE(s3.ok());
  std::vector<float> last;
  ASSERT_TRUE((*s3)->eval(prompt, false, &last).ok());
  ASSERT_EQ(last.size(), n_vocab);
  for (size_t i = 0; i < n_vocab; ++i) EXPECT_NEAR(last[i], batched[(prompt.size() - 1) * n_vocab + i], 1e-4);
}

// The session reserves its compute memory at creation, for the largest
// prompt batch (every row's logits) and decode over the whole context:
// prompts of any length, all-logits evaluation and generation up to the
// context's end then allocate no compute buffer. Without the reserve the
// first eval allocated (and a longer context grew the buffers again).
TEST_F(StoriesModel, GenerationAllocatesNothingAfterTheReserve) {
  for (const bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused attention" : "unfused attention");
    SessionOptions o;
    o.n_ctx = 256;
    o.n_batch = 16;
    o.fused_attention = fused;
    auto s = LlamaSession::create(model_.get(), o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    LlamaSession& session = **s;
    const size_t allocs = session.scheduler().buffer_allocations();
    const size_t bytes = session.compute_buffer_size();
    EXPECT_GT(allocs, 0u) << "nothing was reserved";
    EXPECT_GT(bytes, 0u);
    // A ragged prompt (two full batches and a partial one) with all logits,
    // then single-token steps to the end of the context.
    std::vector<TokenId> prompt = tok_->encode("Once upon a time, there was a little dog named Max. He liked to play.", true);
    while (prompt.size() < 40) prompt.push_back(prompt.back());
    std::vector<float> logits;
    ASSERT_TRUE(session.eval(prompt, true, &logits).ok());
    TokenId next = prompt.back();
    for (size_t pos = prompt.size(); pos < static_cast<size_t>(o.n_ctx); ++pos) {
      Status st = session.eval({next}, false, &logits);
      ASSERT_TRUE(st.ok()) << "at position " << pos << ": " << st.to_string();
      next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    EXPECT_EQ(session.scheduler().buffer_allocations(), allocs) << "a compute buffer was allocated after the reserve";
    EXPECT_EQ(session.compute_buffer_size(), bytes);
  }
}

TEST_F(StoriesModel, ContextLimitIsAnError) {
  SessionOptions o;
  o.n_ctx = 8;
  auto s = LlamaSession::create(model_.get(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto r = generate(**s, *tok_, "Once upon a time, there was a little girl named Lily.", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("more than the context of 8"), std::string::npos) << r.status().message();
  // Generation stops at the context end instead of failing.
  GenerateOptions g;
  g.n_predict = 100;
  auto ok = generate(**s, *tok_, "", g);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_TRUE(ok->stopped_at_context);
  EXPECT_EQ(ok->generated_tokens.size(), 8u);
}

TEST(Sampler, GreedyTopKAndSeeds) {
  const std::vector<float> logits = {0.1f, 3.0f, 2.9f, -1.0f, 3.0f};
  auto g = Sampler::create({});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->sample(logits.data(), 5), 1);  // first on ties
  SamplerOptions o;
  o.temperature = 1.0f;
  o.top_k = 1;
  auto k1 = Sampler::create(o);
  ASSERT_TRUE(k1.ok());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(k1->sample(logits.data(), 5), 1);
  o.top_k = 0;
  o.top_p = 1.0f;
  o.seed = 7;
  auto a = Sampler::create(o);
  auto b = Sampler::create(o);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a->sample(logits.data(), 5), b->sample(logits.data(), 5));
  o.top_p = 1.5f;
  EXPECT_FALSE(Sampler::create(o).ok());
}

// ---------------------------------------------------------- loader errors

using loom::testing::GgufBuilder;

// The tiny llama of tiny_llama.hpp (vocab 6, no tokenizer).
GgufBuilder tiny_llama(const std::string& arch = "llama", const std::string& skip = "",
                       const std::string& bad_shape = "") {
  test::TinyLlama t;
  t.arch = arch;
  t.skip = skip;
  t.bad_shape = bad_shape;
  return t.build();
}

class LoaderErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    reg_ = load_registry();
    dev_ = cpu_device(*reg_);
    if (!dev_) GTEST_SKIP() << "no cpu device (plugin not built?)";
    char tmpl[] = "/tmp/loom-llm-test-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  StatusOr<std::unique_ptr<LlamaModel>> load(const GgufBuilder& b) {
    std::vector<uint8_t> bytes = b.build();
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                 static_cast<std::streamsize>(bytes.size()));
    return LlamaModel::load(path_, dev_);
  }
  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
  std::string path_;
};

TEST_F(LoaderErrors, TinyModelLoadsWithTiedEmbeddingAndRuns) {
  auto m = load(tiny_llama());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->output, (*m)->tok_embd);
  EXPECT_EQ((*m)->hparams().n_rot, 2);
  auto s = LlamaSession::create(m->get(), {});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  std::vector<float> logits;
  Status st = (*s)->eval({1, 2, 3}, true, &logits);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(logits.size(), 18u);
  Status too_long = (*s)->eval(std::vector<TokenId>(14, 1), false, &logits);
  EXPECT_NE(too_long.message().find("3 cached + 14 new tokens exceed the context of 16"), std::string::npos)
      << too_long.message();
}

TEST_F(LoaderErrors, UnsupportedArchitectureIsNamed) {
  auto m = load(tiny_llama("rwkv6"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("unsupported architecture 'rwkv6'"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("[llm.load] " + path_), std::string::npos) << m.status().message();
}

TEST_F(LoaderErrors, MissingTensorIsNamed) {
  auto m = load(tiny_llama("llama", "blk.0.ffn_up.weight"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("missing tensor 'blk.0.ffn_up.weight'"), std::string::npos)
      << m.status().message();
}

TEST_F(LoaderErrors, WrongShapeNamesBothShapes) {
  auto m = load(tiny_llama("llama", "", "blk.0.attn_k.weight"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'blk.0.attn_k.weight' has shape [5, 2], the metadata needs [4, 2]"),
            std::string::npos)
      << m.status().message();
}

TEST_F(LoaderErrors, NotAGgufAndMissingFile) {
  std::ofstream(path_) << "hello, not a model";
  auto m = LlamaModel::load(path_, dev_);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("[llm.load] [gguf.open] " + path_), std::string::npos) << m.status().message();
  auto missing = LlamaModel::load("/nonexistent/model.gguf", dev_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace loom::llm
