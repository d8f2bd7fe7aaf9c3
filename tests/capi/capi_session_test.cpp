// The C API's session, sequence slots, sampler and generate: bad arguments
// come back as statuses with messages, never a crash; greedy output equals
// `loom run`'s; a seed replays sampled text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "capi/capi_fixture.hpp"
#include "cli/run_loom.hpp"
#include "llm/llm_test_util.hpp"
#include "registry/registry_test_util.hpp"
#include "loom/loom.h"

namespace {

using namespace loom::capi_test;
using loom::test::kPublished;
using loom::test::stories_path;
TEST_F(CApiModel, SessionBadArgumentsAndOnePerModel) {
  loom_session_t* s = nullptr;
  EXPECT_FAILS(loom_session_create(nullptr, nullptr, &s), LOOM_STATUS_INVALID_ARGUMENT, "model is NULL");
  EXPECT_FAILS(loom_session_create(model_, nullptr, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "out_session");
  EXPECT_FAILS(loom_session_create(model_, nullptr, &s), LOOM_STATUS_UNIMPLEMENTED, "already has a live session");
  loom_session_free(session_);
  session_ = nullptr;
  loom_session_params_t p;
  loom_session_params_init(&p);
  EXPECT_EQ(p.n_batch, 32);
  EXPECT_EQ(p.kv_type, LOOM_KV_TYPE_F16);
  p.n_batch = 0;
  EXPECT_FAILS(loom_session_create(model_, &p, &s), LOOM_STATUS_INVALID_ARGUMENT, "n_batch 0");
  p.n_batch = 8;
  p.kv_type = 7;
  EXPECT_FAILS(loom_session_create(model_, &p, &s), LOOM_STATUS_INVALID_ARGUMENT, "kv_type 7");
  // API 1.2's 8-bit cache needs heads a multiple of 32 wide: stories260K's are 8.
  p.kv_type = LOOM_KV_TYPE_Q8_0;
  EXPECT_FAILS(loom_session_create(model_, &p, &s), LOOM_STATUS_INVALID_ARGUMENT, "heads are 8 wide");
  p.kv_type = LOOM_KV_TYPE_F32;
  p.n_ctx = 64;
  Status ok(loom_session_create(model_, &p, &session_));
  ASSERT_TRUE(ok.ok()) << ok.text();
  EXPECT_EQ(loom_session_n_ctx(session_), 64);
  EXPECT_EQ(loom_session_n_ctx(nullptr), 0);
  EXPECT_EQ(loom_session_n_past(nullptr), 0);
  loom_session_reset(nullptr);
  loom_session_free(nullptr);
}

// Sequence slots: two prompts in one batch give each the logits it gets
// alone; copy_seq; bad batches refused.
TEST_F(CApiModel, SequenceSlotsDecodeTogether) {
  const std::vector<int32_t> a = {1, 403, 407, 261};  // BOS and ids below stories260K's 512
  const std::vector<int32_t> b = {1, 306, 436};
  std::vector<std::vector<float>> solo;
  for (const auto* p : {&a, &b}) {
    loom_session_reset(session_);
    Status st(loom_session_decode(session_, p->data(), p->size()));
    ASSERT_TRUE(st.ok()) << st.text();
    const float* l = nullptr;
    size_t n = 0;
    ASSERT_TRUE(Status(loom_session_logits(session_, &l, &n)).ok());
    solo.emplace_back(l, l + n);
  }
  loom_session_free(session_);
  session_ = nullptr;
  loom_session_params_t p;
  loom_session_params_init(&p);
  EXPECT_EQ(p.n_seq, 1);
  p.n_seq = 0;
  loom_session_t* s = nullptr;
  EXPECT_FAILS(loom_session_create(model_, &p, &s), LOOM_STATUS_INVALID_ARGUMENT, "n_seq 0");
  p.n_seq = 3;
  p.n_ctx = 64;
  ASSERT_TRUE(Status(loom_session_create(model_, &p, &session_)).ok());
  EXPECT_EQ(loom_session_n_seq(session_), 3);
  EXPECT_EQ(loom_session_n_ctx(session_), 64);
  std::vector<loom_batch_token_t> batch;
  for (size_t j = 0; j < a.size(); ++j) batch.push_back({a[j], 2, static_cast<int32_t>(j), j + 1 == a.size()});
  for (size_t j = 0; j < b.size(); ++j) batch.push_back({b[j], 0, static_cast<int32_t>(j), j + 1 == b.size()});
  const float* logits = nullptr;
  size_t rows = 0;
  Status st(loom_session_decode_batch(session_, batch.data(), batch.size(), &logits, &rows));
  ASSERT_TRUE(st.ok()) << st.text();
  ASSERT_EQ(rows, 2u);
  const size_t n_vocab = solo[0].size();
  for (size_t r = 0; r < 2; ++r) {
    float diff = 0, mag = 1e-6f;
    for (size_t i = 0; i < n_vocab; ++i) {
      diff = std::max(diff, std::fabs(logits[r * n_vocab + i] - solo[r][i]));
      mag = std::max(mag, std::fabs(solo[r][i]));
    }
    EXPECT_LT(diff / mag, 1e-3f) << "row " << r;
  }
  // a's first three tokens copied into slot 1, its last token evaluated there.
  ASSERT_TRUE(Status(loom_session_copy_seq(session_, 2, 1, 3)).ok());
  const loom_batch_token_t last = {a[3], 1, 3, 1};
  ASSERT_TRUE(Status(loom_session_decode_batch(session_, &last, 1, &logits, &rows)).ok());
  float diff = 0;
  for (size_t i = 0; i < n_vocab; ++i) diff = std::max(diff, std::fabs(logits[i] - solo[0][i]));
  EXPECT_LT(diff, 1e-2f);
  const loom_batch_token_t bad = {a[0], 3, 0, 1};
  EXPECT_FAILS(loom_session_decode_batch(session_, &bad, 1, &logits, &rows), LOOM_STATUS_INVALID_ARGUMENT,
               "sequence 3");
  EXPECT_FAILS(loom_session_decode_batch(session_, nullptr, 1, &logits, &rows), LOOM_STATUS_INVALID_ARGUMENT,
               "no tokens");
  EXPECT_FAILS(loom_session_copy_seq(session_, 0, 5, 1), LOOM_STATUS_INVALID_ARGUMENT, "slot 5");
  EXPECT_EQ(loom_session_n_seq(nullptr), 0);
}

TEST_F(CApiModel, DecodeAndLogits) {
  const float* logits = nullptr;
  size_t n_vocab = 0;
  EXPECT_FAILS(loom_session_logits(session_, &logits, &n_vocab), LOOM_STATUS_INVALID_ARGUMENT, "decode tokens first");
  EXPECT_FAILS(loom_session_decode(nullptr, nullptr, 0), LOOM_STATUS_INVALID_ARGUMENT, "session is NULL");
  EXPECT_FAILS(loom_session_decode(session_, nullptr, 0), LOOM_STATUS_INVALID_ARGUMENT, "no tokens");
  const int32_t bad[] = {1, 700};
  EXPECT_FAILS(loom_session_decode(session_, bad, 2), LOOM_STATUS_INVALID_ARGUMENT, "700");
  EXPECT_EQ(loom_session_n_past(session_), 0);
  const int32_t bos = loom_model_token_bos(model_);
  Status d(loom_session_decode(session_, &bos, 1));
  ASSERT_TRUE(d.ok()) << d.text();
  EXPECT_EQ(loom_session_n_past(session_), 1);
  Status l(loom_session_logits(session_, &logits, &n_vocab));
  ASSERT_TRUE(l.ok()) << l.text();
  EXPECT_EQ(n_vocab, 512u);
  for (size_t i = 0; i < n_vocab; ++i) ASSERT_TRUE(std::isfinite(logits[i])) << i;
  loom_session_reset(session_);
  EXPECT_EQ(loom_session_n_past(session_), 0);
  EXPECT_FAILS(loom_session_logits(session_, &logits, &n_vocab), LOOM_STATUS_INVALID_ARGUMENT, "decode tokens first");
  // Past the context: an error naming the numbers, nothing evaluated.
  std::vector<int32_t> many(static_cast<size_t>(loom_session_n_ctx(session_)) + 1, 5);
  Status past(loom_session_decode(session_, many.data(), many.size()));
  EXPECT_FALSE(past.ok());
  EXPECT_NE(past.message().find(std::to_string(many.size())), std::string::npos) << past.text();
  EXPECT_EQ(loom_session_n_past(session_), 0);
}

TEST_F(CApiModel, SamplerParameters) {
  loom_sampler_t* s = nullptr;
  EXPECT_FAILS(loom_sampler_create(nullptr, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "out_sampler");
  loom_sampler_params_t p;
  loom_sampler_params_init(&p);
  EXPECT_EQ(p.temperature, 0.0f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_EQ(p.seed, 42u);
  p.top_p = 0.0f;
  EXPECT_FAILS(loom_sampler_create(&p, &s), LOOM_STATUS_INVALID_ARGUMENT, "top_p");
  p.top_p = 0.9f;
  p.temperature = -1.0f;
  EXPECT_FAILS(loom_sampler_create(&p, &s), LOOM_STATUS_INVALID_ARGUMENT, "temperature");
  p.temperature = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FAILS(loom_sampler_create(&p, &s), LOOM_STATUS_INVALID_ARGUMENT, "temperature");
  EXPECT_EQ(s, nullptr);
  Status ok(loom_sampler_create(nullptr, &s));
  ASSERT_TRUE(ok.ok());
  int32_t tok = -1;
  EXPECT_FAILS(loom_session_sample(session_, s, &tok), LOOM_STATUS_INVALID_ARGUMENT, "decode tokens first");
  EXPECT_FAILS(loom_session_sample(nullptr, s, &tok), LOOM_STATUS_INVALID_ARGUMENT, "session is NULL");
  EXPECT_FAILS(loom_session_sample(session_, nullptr, &tok), LOOM_STATUS_INVALID_ARGUMENT, "sampler is NULL");
  EXPECT_FAILS(loom_session_sample(session_, s, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "out_token");
  loom_sampler_free(s);
  loom_sampler_free(nullptr);
}

// decode / sample / detokenize by hand gives the text generate streams.
TEST_F(CApiModel, HandLoopEqualsGenerate) {
  loom_sampler_t* greedy = nullptr;
  Status sc(loom_sampler_create(nullptr, &greedy));
  ASSERT_TRUE(sc.ok());
  std::vector<int32_t> seq = {loom_model_token_bos(model_)};
  int32_t next = seq[0];
  for (int i = 0; i < 40; ++i) {
    Status d(loom_session_decode(session_, &next, 1));
    ASSERT_TRUE(d.ok()) << d.text();
    Status s(loom_session_sample(session_, greedy, &next));
    ASSERT_TRUE(s.ok()) << s.text();
    if (loom_model_token_is_eog(model_, next)) break;
    seq.push_back(next);
  }
  loom_sampler_free(greedy);
  std::vector<char> buf(4096);
  size_t len = 0;
  Status dt(loom_model_detokenize(model_, seq.data(), seq.size(), buf.data(), buf.size(), &len));
  ASSERT_TRUE(dt.ok()) << dt.text();
  const std::string by_hand(buf.data(), len);
  loom_generate_result_t r;
  loom_generate_result_init(&r);
  const std::string streamed = generate("", 40, &r);
  EXPECT_EQ(by_hand, streamed);
  EXPECT_EQ(r.n_prompt_tokens, 1);
  EXPECT_EQ(r.n_generated, static_cast<int32_t>(seq.size()) - 1);
  EXPECT_EQ(r.stop, LOOM_STOP_LENGTH);
}

TEST_F(CApiModel, GreedyGenerateEqualsLoomRun) {
  const std::string text = generate("", 80);
  EXPECT_EQ(text.rfind(kPublished, 0), 0u) << text;
  // `loom run` prints the prompt (here none), the text and a newline.
  const auto cli = loom::test::run_loom("run -m " + stories_path() + " -n 80 --device cpu", "", false);
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(cli.out, text + "\n");
  // With a prompt: the CLI echoes the prompt, then the same continuation.
  const std::string cont = generate("Once upon a time", 30);
  const auto cli2 = loom::test::run_loom("run -m " + stories_path() + " -n 30 -p 'Once upon a time'", "", false);
  ASSERT_EQ(cli2.exit_code, 0) << cli2.out;
  EXPECT_EQ(cli2.out, "Once upon a time" + cont + "\n");
}

TEST_F(CApiModel, SampledGenerateIsReplayedBySeed) {
  loom_generate_params_t p;
  loom_generate_params_init(&p);
  p.n_predict = 30;
  p.temperature = 0.8f;
  p.seed = 7;
  std::string a, b;
  p.on_piece = [](const char* piece, size_t len, void* user) {
    static_cast<std::string*>(user)->append(piece, len);
    return true;
  };
  p.user_data = &a;
  Status s1(loom_session_generate(session_, "", &p, nullptr));
  ASSERT_TRUE(s1.ok()) << s1.text();
  p.user_data = &b;
  Status s2(loom_session_generate(session_, "", &p, nullptr));
  ASSERT_TRUE(s2.ok()) << s2.text();
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.empty());
  const auto cli = loom::test::run_loom("run -m " + stories_path() + " -n 30 --temp 0.8 -s 7", "", false);
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(cli.out, a + "\n");
}

TEST_F(CApiModel, CallbackStopsEarly) {
  loom_generate_params_t p;
  loom_generate_params_init(&p);
  struct Count {
    int pieces = 0;
    std::string text;
  } c;
  p.on_piece = [](const char* piece, size_t len, void* user) {
    auto* c = static_cast<Count*>(user);
    c->text.append(piece, len);
    return ++c->pieces < 3;
  };
  p.user_data = &c;
  loom_generate_result_t r;
  loom_generate_result_init(&r);
  Status st(loom_session_generate(session_, "", &p, &r));
  ASSERT_TRUE(st.ok()) << st.text();
  EXPECT_EQ(c.pieces, 3);
  EXPECT_EQ(r.stop, LOOM_STOP_CALLER);
  EXPECT_EQ(r.n_generated, 3);
  EXPECT_EQ(c.text, "Once upon a");
  // A short context ends the text with LOOM_STOP_CONTEXT.
  loom_session_free(session_);
  loom_session_params_t sp;
  loom_session_params_init(&sp);
  sp.n_ctx = 8;
  Status sc(loom_session_create(model_, &sp, &session_));
  ASSERT_TRUE(sc.ok()) << sc.text();
  p.on_piece = nullptr;
  Status s2(loom_session_generate(session_, "", &p, &r));
  ASSERT_TRUE(s2.ok()) << s2.text();
  EXPECT_EQ(r.stop, LOOM_STOP_CONTEXT);
  // The last token is sampled from the logits of position 7 and never evaluated.
  EXPECT_EQ(r.n_prompt_tokens + r.n_generated, 9);
}

TEST_F(CApiModel, GenerateBadArguments) {
  EXPECT_FAILS(loom_session_generate(nullptr, "", nullptr, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "session is NULL");
  EXPECT_FAILS(loom_session_generate(session_, nullptr, nullptr, nullptr), LOOM_STATUS_INVALID_ARGUMENT,
               "prompt is NULL");
  loom_generate_params_t p;
  loom_generate_params_init(&p);
  EXPECT_EQ(p.n_predict, 200);
  p.n_predict = -3;
  EXPECT_FAILS(loom_session_generate(session_, "", &p, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "n_predict -3");
  p.n_predict = 5;
  p.top_p = 2.0f;
  p.temperature = 0.5f;
  EXPECT_FAILS(loom_session_generate(session_, "", &p, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "top_p");
  p.top_p = 0.9f;
  p.struct_size = 12;
  EXPECT_FAILS(loom_session_generate(session_, "", &p, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "struct_size 12");
  // A prompt longer than the context names both lengths.
  loom_session_free(session_);
  loom_session_params_t sp;
  loom_session_params_init(&sp);
  sp.n_ctx = 4;
  Status sc(loom_session_create(model_, &sp, &session_));
  ASSERT_TRUE(sc.ok());
  EXPECT_FAILS(loom_session_generate(session_, "Once upon a time there was a cat", nullptr, nullptr),
               LOOM_STATUS_INVALID_ARGUMENT, "more than the context of 4");
  // A result struct from an older header: only its fields are written.
  struct {
    loom_generate_result_t r;
    int32_t canary;
  } old;
  std::memset(&old, 0x5a, sizeof old);
  old.r.struct_size = offsetof(loom_generate_result_t, n_generated) + sizeof(int32_t);
  loom_session_free(session_);
  Status s3(loom_session_create(model_, nullptr, &session_));
  ASSERT_TRUE(s3.ok());
  loom_generate_params_init(&p);
  p.n_predict = 2;
  Status g(loom_session_generate(session_, "", &p, &old.r));
  ASSERT_TRUE(g.ok()) << g.text();
  EXPECT_EQ(old.r.n_generated, 2);
  int32_t stop_bytes;
  std::memcpy(&stop_bytes, &old.r.stop, sizeof stop_bytes);
  EXPECT_EQ(stop_bytes, 0x5a5a5a5a);  // past struct_size: untouched
}

}  // namespace
