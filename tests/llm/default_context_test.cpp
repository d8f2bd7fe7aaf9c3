// The default context (SessionOptions::n_ctx = 0): the model's
// context_length, unless its KV cache would take more than half of the free
// memory of the device holding it; then halved until it does not (never
// below 4,096 tokens). A context asked for explicitly that does not fit is
// an error naming both numbers. A cache of 1 GiB or more costs memory only
// as its rows fill (the cpu's buffers that large hand cleared pages back),
// so a large default context does not cost its size up front.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/llama_session.hpp"
#include "loom/registry/registry.hpp"
#include "cpu_file_fixture.hpp"
#include "tiny_arch.hpp"

namespace loom::llm {
namespace {

using test::ArchSpec;
using test::TinyArchModel;

// A model trained (by its header) on 2^24 tokens whose F16 cache is 8 KiB a
// token: 128 GiB, more than half of any machine this runs on.
ArchSpec huge_context_spec() {
  ArchSpec s;
  s.n_embd = 256;
  s.n_head = 2;
  s.n_head_kv = 2;
  s.n_layer = 8;
  s.n_ctx = int64_t{1} << 24;
  return s;
}
constexpr double kCacheBytesPerToken = 8 * 2 * 256 * 2.0;  // layers x (K, V) x kv width x F16

class DefaultContext : public test::CpuFileTest {
 protected:
  // That model, loaded on the cpu; the cpu's free bytes in *free (0 when it
  // reports none).
  std::unique_ptr<LlamaModel> load_huge(uint64_t* free) {
    const TinyArchModel m(huge_context_spec());
    EXPECT_TRUE(m.write(path_, m.gguf()));
    auto model = LlamaModel::load(path_, dev_);
    EXPECT_TRUE(model.ok()) << model.status().to_string();
    auto mem = dev_->memory();
    *free = mem.ok() ? mem->free : 0;
    return model.ok() ? std::move(model).value() : nullptr;
  }
};

TEST_F(DefaultContext, AHugeTrainingContextIsHalvedUntilItsCacheFitsHalfTheFreeMemory) {
  uint64_t free = 0;
  std::unique_ptr<LlamaModel> model = load_huge(&free);
  ASSERT_NE(model, nullptr);
  if (free == 0) GTEST_SKIP() << "the cpu reports no free memory";
  const double room = 0.5 * static_cast<double>(free);
  if (kCacheBytesPerToken * static_cast<double>(int64_t{1} << 24) <= room) {
    GTEST_SKIP() << "this machine has room for a 128 GiB cache";
  }
  auto s = LlamaSession::create(model.get(), {});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const int64_t n = (*s)->n_ctx();
  EXPECT_GE(n, 4096);
  EXPECT_LT(n, int64_t{1} << 24);
  EXPECT_EQ((int64_t{1} << 24) % n, 0) << n << " is not the training context halved";
  // Within half of the free memory, and the next doubling beyond it (the
  // free figure drifts a little between the two reads).
  EXPECT_LE(kCacheBytesPerToken * static_cast<double>(n), room * 1.05) << n;
  if (n > 4096) {
    EXPECT_GT(2.0 * kCacheBytesPerToken * static_cast<double>(n), room * 0.95) << n;
  }
  // The session works: a prompt, then a step.
  std::vector<float> logits;
  ASSERT_TRUE((*s)->eval({1, 17, 5, 33}, false, &logits).ok());
  EXPECT_EQ(logits.size(), static_cast<size_t>(huge_context_spec().n_vocab));
  ASSERT_TRUE((*s)->eval({9}, false, &logits).ok());
  EXPECT_EQ((*s)->n_past(), 5);
}

TEST_F(DefaultContext, AnExplicitContextThatDoesNotFitIsAnError) {
  uint64_t free = 0;
  std::unique_ptr<LlamaModel> model = load_huge(&free);
  ASSERT_NE(model, nullptr);
  if (free == 0) GTEST_SKIP() << "the cpu reports no free memory";
  if (kCacheBytesPerToken * static_cast<double>(int64_t{1} << 24) <= static_cast<double>(free)) {
    GTEST_SKIP() << "this machine has room for a 128 GiB cache";
  }
  SessionOptions o;
  o.n_ctx = int64_t{1} << 24;
  auto s = LlamaSession::create(model.get(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.status().message().find("16777216 tokens needs"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("--ctx N"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace loom::llm
