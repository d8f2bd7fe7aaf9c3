// The header-only C++ API (include/loom/loom.hpp) over the C API: RAII
// handles, errors as loom::api::Error, the token-by-token calls.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "llm/llm_test_util.hpp"
#include "loom/loom.hpp"

namespace {

using loom::test::kPublished;
using loom::test::stories_path;

class CppApi : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st;
    if (::stat(stories_path().c_str(), &st) != 0) GTEST_SKIP() << "model not found: " << stories_path();
    unsetenv("LOOM_DEVICES");
  }
};

TEST_F(CppApi, ErrorsAreExceptionsWithCodes) {
  auto registry = loom::api::Registry::open({LOOM_TEST_PLUGIN_DIR});
  try {
    loom::api::Devices::select(registry, "nosuch5");
    FAIL() << "no exception";
  } catch (const loom::api::Error& e) {
    EXPECT_EQ(e.code(), LOOM_STATUS_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("nosuch5"), std::string::npos) << e.what();
  }
  auto devices = loom::api::Devices::select(registry, "cpu");
  EXPECT_EQ(devices.names(), "cpu");
  EXPECT_THROW(devices[5], loom::api::Error);
  EXPECT_THROW(loom::api::Model::load(devices, "/nonexistent.gguf"), loom::api::Error);
  loom::api::SamplerOptions bad;
  bad.temperature = 1.0f;
  bad.top_p = 0.0f;
  EXPECT_THROW(loom::api::Sampler{bad}, loom::api::Error);
}

TEST_F(CppApi, GenerateStreamsThePublishedText) {
  auto registry = loom::api::Registry::open({LOOM_TEST_PLUGIN_DIR}, "cpu");
  EXPECT_FALSE(registry.plugins().empty());
  EXPECT_FALSE(registry.devices().empty());
  auto devices = loom::api::Devices::select(registry, "cpu");
  uint64_t last_done = 0, last_total = 1;
  loom::api::ModelOptions mo;
  mo.progress = [&](uint64_t done, uint64_t total, const char*) {
    last_done = done;
    last_total = total;
  };
  auto model = loom::api::Model::load(devices, stories_path(), mo);
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(model.architecture(), "llama");
  loom::api::Session session(model);
  std::string text;
  loom::api::GenerateOptions go;
  go.n_predict = 80;
  auto r = session.generate("", go, [&](std::string_view piece) {
    text += piece;
    return true;
  });
  EXPECT_EQ(text.rfind(kPublished, 0), 0u) << text;
  EXPECT_EQ(r.n_generated, 80);
  EXPECT_EQ(r.stop, LOOM_STOP_LENGTH);
  // An exception from the callback stops generation and comes out unchanged.
  EXPECT_THROW(session.generate("", go, [](std::string_view) -> bool { throw std::runtime_error("mine"); }),
               std::runtime_error);
}

TEST_F(CppApi, TokenByToken) {
  auto registry = loom::api::Registry::open({LOOM_TEST_PLUGIN_DIR});
  auto model = loom::api::Model::load(loom::api::Devices::select(registry, "cpu"), stories_path());
  const std::vector<int32_t> ids = model.tokenize("Once upon a time");
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], model.token_bos());
  EXPECT_EQ(model.detokenize(ids), "Once upon a time");
  EXPECT_EQ(model.token_to_piece(ids[1]), " Once");
  loom::api::Session session(model, {});
  EXPECT_THROW(loom::api::Session{model}, loom::api::Error);  // one session per model
  loom::api::Sampler greedy;
  session.decode(ids);
  EXPECT_EQ(session.n_past(), static_cast<int32_t>(ids.size()));
  EXPECT_EQ(session.logits().second, static_cast<size_t>(model.n_vocab()));
  const int32_t next = session.sample(greedy);
  EXPECT_EQ(model.token_to_piece(next), ",");  // "Once upon a time,"
  session.reset();
  EXPECT_EQ(session.n_past(), 0);
  EXPECT_THROW(session.logits(), loom::api::Error);
}

}  // namespace
