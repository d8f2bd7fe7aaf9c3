// Strict model validation (issue 11, finding 4): header values bounded
// before anything is sized by them, the vocabulary checked against the
// embedding at load, non-finite logits an error naming the position, and
// LOOM_CHECK_FINITE=1 naming the first node that produced one.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>

#include "llm/model/llama_model.hpp"
#include "llm/session/llama_session.hpp"
#include "loom/registry/registry.hpp"
#include "cpu_file_fixture.hpp"
#include "peak_rss.hpp"
#include "tiny_llama.hpp"

namespace loom::llm {
namespace {

using test::peak_rss_bytes;
using test::TinyLlama;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class ModelValidation : public test::CpuFileTest {
 protected:
  void TearDown() override {
    test::CpuFileTest::TearDown();
    unsetenv("LOOM_CHECK_FINITE");
  }
  StatusOr<std::unique_ptr<LlamaModel>> load(const TinyLlama& m) {
    EXPECT_TRUE(m.write(path_));
    return LlamaModel::load(path_, dev_);
  }
  // The load error of a model with one key changed.
  std::string key_error(const std::string& key, uint64_t value) {
    TinyLlama m;
    m.keys[key] = value;
    auto r = load(m);
    EXPECT_FALSE(r.ok()) << key << " = " << value << " loaded";
    return r.ok() ? std::string() : r.status().message();
  }
};

// The tokenizer is checked when the file is opened, before any weight is
// placed: an unsupported one fails the load (before, loom run found it only
// after loading every weight).
TEST_F(ModelValidation, UnsupportedTokenizerFailsTheLoad) {
  TinyLlama m;
  m.n_tokens = 6;
  m.tokenizer_model = "bogus";
  auto r = load(m);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.status().message(), "bogus")) << r.status().message();
  m.tokenizer_model = "llama";
  auto ok = load(m);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  ASSERT_NE((*ok)->tokenizer(), nullptr);
  EXPECT_EQ((*ok)->tokenizer()->n_vocab(), 6);
}

// 2^32 layers: before, layers.resize() threw std::bad_alloc out of load().
TEST_F(ModelValidation, HugeBlockCountIsAnErrorNamingKeyValueAndBound) {
  const std::string e = key_error("block_count", uint64_t{1} << 32);
  EXPECT_TRUE(has(e, "llama.block_count = 4294967296")) << e;
  EXPECT_TRUE(has(e, "limit of 4096 layers")) << e;
}

// 2^24 layers is under no absurd bound, but the file holds tensors for one:
// refused from the tensor count before anything is sized by it (before, the
// layer table alone took about 1.2 GB).
TEST_F(ModelValidation, BlockCountBeyondTheFileIsRefusedBeforeAllocating) {
  const size_t before = peak_rss_bytes();
  const std::string e = key_error("block_count", 4000);
  EXPECT_TRUE(has(e, "llama.block_count = 4000: 4000 layers need 16000 tensors, the file has 11")) << e;
  TinyLlama m;
  m.keys["block_count"] = uint64_t{1} << 24;
  auto r = load(m);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.status().message(), "llama.block_count = 16777216")) << r.status().message();
  EXPECT_LT(peak_rss_bytes() - before, size_t{64} << 20) << "loading grew the peak RSS by " << (peak_rss_bytes() - before);
}

TEST_F(ModelValidation, EveryDimensionIsBounded) {
  struct Case {
    const char* key;
    uint64_t value;
    const char* want;
  };
  const Case cases[] = {
      {"embedding_length", uint64_t{1} << 21, "llama.embedding_length = 2097152: above loom's limit of 1048576 dims"},
      {"attention.head_count", 8192, "llama.attention.head_count = 8192: above loom's limit of 4096 heads"},
      {"attention.head_count_kv", 5000, "llama.attention.head_count_kv = 5000: above loom's limit of 4096 heads"},
      {"feed_forward_length", uint64_t{1} << 23, "llama.feed_forward_length = 8388608: above loom's limit"},
      {"context_length", uint64_t{1} << 25, "llama.context_length = 33554432: above loom's limit of 16777216 tokens"},
      {"context_length", uint64_t{1} << 40, "llama.context_length = 1099511627776: above loom's limit"},
      {"rope.dimension_count", 5000, "llama.rope.dimension_count = 5000: above loom's limit of 4096"},
      {"block_count", 0, "llama.block_count = 0: must be >= 1"},
  };
  for (const Case& c : cases) {
    const std::string e = key_error(c.key, c.value);
    EXPECT_TRUE(has(e, c.want)) << c.key << ": " << e;
    EXPECT_TRUE(has(e, "[llm.load] " + path_)) << e;
  }
}

TEST_F(ModelValidation, AMalformedFileIsNamedOnceInTheError) {
  FILE* f = std::fopen(path_.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite("GGUF\x03\x00\x00\x00garbage", 1, 15, f);
  std::fclose(f);
  auto r = LlamaModel::load(path_, dev_);
  ASSERT_FALSE(r.ok());
  const std::string e = r.status().message();
  EXPECT_TRUE(has(e, "truncated")) << e;
  const size_t first = e.find(path_);
  ASSERT_NE(first, std::string::npos) << e;
  EXPECT_EQ(e.find(path_, first + 1), std::string::npos) << "the path appears twice: " << e;
}

TEST_F(ModelValidation, VocabularySizeMismatchIsFoundAtLoad) {
  TinyLlama m;
  m.n_tokens = 7;  // the tokenizer knows one token more than token_embd has rows
  auto r = load(m);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.status().message(), "the tokenizer has 7 tokens (tokenizer.ggml.tokens), tensor "
                                        "'token_embd.weight' has 6 rows"))
      << r.status().message();
  m.n_tokens = 6;
  auto ok = load(m);
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
}

TEST_F(ModelValidation, NanWeightsFailTheStepNamingThePosition) {
  TinyLlama m;
  m.fill_tensor = "blk.0.ffn_down.weight";
  m.fill_value = std::nanf("");
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto s = LlamaSession::create(model->get(), {});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  std::vector<float> logits;
  Status st = (*s)->eval({1, 3, 4}, false, &logits);
  ASSERT_FALSE(st.ok()) << "NaN weights gave logits without an error";
  EXPECT_TRUE(has(st.message(), "[llm.eval] logits of the token at position 2 are not finite: NaN at vocab id 0"))
      << st.message();
  EXPECT_TRUE(has(st.message(), "LOOM_CHECK_FINITE=1")) << st.message();
}

TEST_F(ModelValidation, InfiniteWeightsAreCaughtToo) {
  TinyLlama m;
  m.fill_tensor = "output_norm.weight";
  m.fill_value = std::numeric_limits<float>::infinity();
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto s = LlamaSession::create(model->get(), {});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  std::vector<float> logits;
  Status st = (*s)->eval({1}, true, &logits);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(has(st.message(), "logits of the token at position 0 are not finite")) << st.message();
}

TEST_F(ModelValidation, CheckFiniteNamesTheFirstNodeWithOne) {
  setenv("LOOM_CHECK_FINITE", "1", 1);
  TinyLlama m;
  m.fill_tensor = "blk.0.ffn_down.weight";
  m.fill_value = std::nanf("");
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto s = LlamaSession::create(model->get(), {});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  std::vector<float> logits;
  Status st = (*s)->eval({1, 3}, false, &logits);
  ASSERT_FALSE(st.ok());
  const std::string& e = st.message();
  EXPECT_TRUE(has(e, "[llm.check_finite] step at positions [0, 2): node ")) << e;
  EXPECT_TRUE(has(e, "MUL_MAT")) << e;
  EXPECT_TRUE(has(e, "'blk.0.ffn_down.weight'")) << e;
  EXPECT_TRUE(has(e, " on cpu, is the first to produce a non-finite value: NaN")) << e;
}

TEST_F(ModelValidation, CheckFiniteKeepsGoodModelsWorking) {
  TinyLlama m;
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  std::vector<float> plain, checked;
  {
    auto s = LlamaSession::create(model->get(), {});  // one session per model at a time
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_TRUE((*s)->eval({1, 3, 4, 5}, true, &plain).ok());
  }
  SessionOptions o;
  o.check_finite_nodes = true;
  auto s = LlamaSession::create(model->get(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_TRUE((*s)->check_finite_nodes());
  Status st = (*s)->eval({1, 3, 4, 5}, true, &checked);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(plain, checked);
}

// A context from the header whose KV cache cannot fit the device is refused
// with the sizes instead of exhausting the machine.
TEST_F(ModelValidation, KvCacheLargerThanTheDeviceIsRefused) {
  TinyLlama m;
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto mem = dev_->memory();
  if (!mem.ok() || mem->total == 0) GTEST_SKIP() << "the cpu device reports no memory figures";
  SessionOptions o;
  o.n_ctx = int64_t{1} << 42;  // 2 x 2 floats per token: 64 TiB
  auto s = LlamaSession::create(model->get(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted) << s.status().to_string();
  EXPECT_TRUE(has(s.status().message(), "the KV cache of 4398046511104 tokens needs")) << s.status().message();
  EXPECT_TRUE(has(s.status().message(), "bytes on cpu")) << s.status().message();
}

}  // namespace
}  // namespace loom::llm
