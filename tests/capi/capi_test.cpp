// The C API (include/loom/loom.h), part one: versions, statuses, records,
// selection, model load, tokenizer, handle lifetimes (the session, sampler
// and generate are in capi_session_test.cpp); bad arguments come back as
// statuses with messages, never a crash.
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

TEST(CApiVersion, RuntimeVersionMatchesTheHeader) {
  EXPECT_EQ(loom_api_version(), LOOM_API_VERSION);
  EXPECT_EQ(LOOM_API_MAJOR(loom_api_version()), LOOM_API_VERSION_MAJOR);
  EXPECT_EQ(LOOM_API_MINOR(loom_api_version()), LOOM_API_VERSION_MINOR);
  EXPECT_STREQ(loom_version_string(), LOOM_VERSION_STRING_FOR_TEST);
}

TEST(CApiStatus, NullIsOkAndCodesHaveNames) {
  EXPECT_EQ(loom_status_code(nullptr), LOOM_STATUS_OK);
  EXPECT_STREQ(loom_status_message(nullptr), "");
  loom_status_free(nullptr);
  EXPECT_STREQ(loom_status_code_name(LOOM_STATUS_NOT_FOUND), "NOT_FOUND");
  EXPECT_STREQ(loom_status_code_name(LOOM_STATUS_ABORTED), "ABORTED");
  EXPECT_STREQ(loom_status_code_name(static_cast<loom_status_code_t>(99)), "UNKNOWN");
}

TEST(CApiRegistry, BadArgumentsAreStatuses) {
  EXPECT_FAILS(loom_registry_open(nullptr, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "out_registry is NULL");
  loom_registry_options_t o;
  loom_registry_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof o);
  loom_registry_t* reg = nullptr;
  o.n_plugin_paths = 2;
  EXPECT_FAILS(loom_registry_open(&o, &reg), LOOM_STATUS_INVALID_ARGUMENT, "plugin_paths is NULL");
  const char* paths[] = {""};
  o.plugin_paths = paths;
  o.n_plugin_paths = 1;
  EXPECT_FAILS(loom_registry_open(&o, &reg), LOOM_STATUS_INVALID_ARGUMENT, "plugin_paths[0] is empty");
  o.struct_size = 4;
  EXPECT_FAILS(loom_registry_open(&o, &reg), LOOM_STATUS_INVALID_ARGUMENT, "struct_size 4 is too small");
  EXPECT_EQ(reg, nullptr);
  // Queries on NULL handles answer "nothing".
  EXPECT_EQ(loom_registry_plugin_count(nullptr), 0u);
  EXPECT_EQ(loom_registry_plugin(nullptr, 0), nullptr);
  EXPECT_EQ(loom_registry_device_count(nullptr), 0u);
  EXPECT_EQ(loom_registry_device(nullptr, 0), nullptr);
  EXPECT_EQ(loom_registry_warning_count(nullptr), 0u);
  EXPECT_EQ(loom_registry_warning(nullptr, 0), nullptr);
  loom_registry_close(nullptr);
}

TEST_F(CApi, RecordsListPluginsAndDevices) {
  const size_t n = loom_registry_plugin_count(reg_);
  ASSERT_GT(n, 0u);
  bool cpu_ready = false;
  for (size_t i = 0; i < n; ++i) {
    const loom_plugin_record_t* r = loom_registry_plugin(reg_, i);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->struct_size, sizeof *r);
    EXPECT_NE(std::string(r->path).find("libloom-"), std::string::npos) << r->path;
    if (std::string(r->name) == "cpu" && r->state == LOOM_PLUGIN_STATE_READY) {
      cpu_ready = true;
      EXPECT_STREQ(r->reason, "");
      EXPECT_GE(r->n_devices, 1u);
      EXPECT_EQ(r->abi_version >> 16, 1u);
    }
    if (r->state != LOOM_PLUGIN_STATE_READY) {
      EXPECT_STRNE(r->reason, "") << r->path;
    }
  }
  EXPECT_TRUE(cpu_ready);
  EXPECT_EQ(loom_registry_plugin(reg_, n), nullptr);
  bool cpu_listed = false;
  for (size_t i = 0; i < loom_registry_device_count(reg_); ++i) {
    const loom_device_info_t* d = loom_registry_device(reg_, i);
    ASSERT_NE(d, nullptr);
    if (std::string(d->name) == "cpu") {
      cpu_listed = true;
      EXPECT_EQ(d->kind, LOOM_DEVICE_KIND_CPU);
      EXPECT_STREQ(d->plugin, "cpu");
      EXPECT_FALSE(d->emulated);
    }
  }
  EXPECT_TRUE(cpu_listed);
  EXPECT_EQ(loom_registry_device(reg_, loom_registry_device_count(reg_)), nullptr);
}

TEST(CApiRegistry, BrokenPluginsAreRecordsWithReasons) {
  loom_registry_options_t o;
  loom_registry_options_init(&o);
  const char* paths[] = {LOOM_TEST_FAKE_DIR};
  o.plugin_paths = paths;
  o.n_plugin_paths = 1;
  loom_registry_t* reg = nullptr;
  Status st(loom_registry_open(&o, &reg));
  ASSERT_TRUE(st.ok()) << st.text();
  size_t failed = 0;
  for (size_t i = 0; i < loom_registry_plugin_count(reg); ++i) {
    const loom_plugin_record_t* r = loom_registry_plugin(reg, i);
    if (r->state == LOOM_PLUGIN_STATE_FAILED) {
      ++failed;
      EXPECT_STRNE(r->reason, "") << r->path;
      EXPECT_STREQ(r->origin, "application");
    }
  }
  EXPECT_GT(failed, 0u);
  loom_registry_close(reg);
}

TEST_F(CApi, SelectionByNamesPoliciesAndEnvironment) {
  loom_devices_t* d = nullptr;
  EXPECT_FAILS(loom_devices_select(nullptr, "cpu", &d), LOOM_STATUS_INVALID_ARGUMENT, "registry is NULL");
  EXPECT_FAILS(loom_devices_select(reg_, "cpu", nullptr), LOOM_STATUS_INVALID_ARGUMENT, "out_devices is NULL");
  // A named device that is missing is an error naming it.
  EXPECT_FAILS(loom_devices_select(reg_, "cpu,nosuch7", &d), LOOM_STATUS_NOT_FOUND, "nosuch7");
  EXPECT_EQ(d, nullptr);
  Status ok(loom_devices_select(reg_, "cpu", &d));
  ASSERT_TRUE(ok.ok()) << ok.text();
  ASSERT_EQ(loom_devices_count(d), 1u);
  EXPECT_STREQ(loom_devices_get(d, 0)->name, "cpu");
  EXPECT_EQ(loom_devices_get(d, 1), nullptr);
  loom_devices_free(d);
  d = nullptr;
  Status pol(loom_devices_select(reg_, "cpu-only", &d));
  ASSERT_TRUE(pol.ok()) << pol.text();
  for (size_t i = 0; i < loom_devices_count(d); ++i) EXPECT_EQ(loom_devices_get(d, i)->kind, LOOM_DEVICE_KIND_CPU);
  loom_devices_free(d);
  d = nullptr;
  // NULL: LOOM_DEVICES, else the policy auto (as `loom run`): the cpu last.
  Status def(loom_devices_select(reg_, nullptr, &d));
  ASSERT_TRUE(def.ok()) << def.text();
  ASSERT_GE(loom_devices_count(d), 1u);
  EXPECT_STREQ(loom_devices_get(d, loom_devices_count(d) - 1)->name, "cpu");
  loom_devices_free(d);
  d = nullptr;
  setenv("LOOM_DEVICES", "bogus3", 1);
  EXPECT_FAILS(loom_devices_select(reg_, "", &d), LOOM_STATUS_NOT_FOUND, "LOOM_DEVICES=bogus3");
  unsetenv("LOOM_DEVICES");
  EXPECT_EQ(loom_devices_count(nullptr), 0u);
  EXPECT_EQ(loom_devices_get(nullptr, 0), nullptr);
  loom_devices_free(nullptr);
}

TEST_F(CApi, ModelLoadErrorsNameTheFile) {
  loom_model_t* m = nullptr;
  EXPECT_FAILS(loom_model_load(nullptr, "x.gguf", nullptr, &m), LOOM_STATUS_INVALID_ARGUMENT, "devices is NULL");
  EXPECT_FAILS(loom_model_load(cpu(), nullptr, nullptr, &m), LOOM_STATUS_INVALID_ARGUMENT, "path is NULL");
  EXPECT_FAILS(loom_model_load(cpu(), "x.gguf", nullptr, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "out_model is NULL");
  {
    Status st(loom_model_load(cpu(), "/nonexistent/m.gguf", nullptr, &m));
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("/nonexistent/m.gguf"), std::string::npos) << st.text();
  }
  // A folder, and a file that is not GGUF.
  {
    Status st(loom_model_load(cpu(), "/tmp", nullptr, &m));
    EXPECT_NE(st.message().find("not a regular file"), std::string::npos) << st.text();
  }
  const std::string bad = ::testing::TempDir() + "/capi_malformed.gguf";
  std::ofstream(bad) << "GGUF but not really a model file, only text";
  {
    Status st(loom_model_load(cpu(), bad.c_str(), nullptr, &m));
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(bad), std::string::npos) << st.text();
  }
  // A GGUF file with a vocabulary but no weights.
  const std::string vocab = loom::test::models_dir() + "/vocab/ggml-vocab-llama-spm.gguf";
  struct stat vst;
  if (::stat(vocab.c_str(), &vst) == 0) {
    Status st(loom_model_load(cpu(), vocab.c_str(), nullptr, &m));
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("ggml-vocab-llama-spm.gguf"), std::string::npos) << st.text();
  }
  loom_model_params_t p;
  loom_model_params_init(&p);
  p.n_gpu_layers = -1;  // the automatic fit (CApi.AutoFitOffloadsWhatFits), not a bad argument
  EXPECT_FAILS(loom_model_load(cpu(), "x.gguf", &p, &m), LOOM_STATUS_NOT_FOUND, "x.gguf");
  p.n_gpu_layers = 0;
  p.struct_size = 8;
  EXPECT_FAILS(loom_model_load(cpu(), "x.gguf", &p, &m), LOOM_STATUS_INVALID_ARGUMENT, "struct_size 8");
  EXPECT_EQ(m, nullptr);
  loom_model_free(nullptr);
  EXPECT_EQ(loom_model_n_vocab(nullptr), 0);
  EXPECT_EQ(loom_model_n_ctx_train(nullptr), 0);
  EXPECT_STREQ(loom_model_architecture(nullptr), "");
  EXPECT_EQ(loom_model_token_bos(nullptr), -1);
  EXPECT_FALSE(loom_model_token_is_eog(nullptr, 2));
}

// n_gpu_layers < 0 is `loom run`'s automatic fit: on sim0,cpu with room on
// sim0 for a few layers' weights and compute, fewer layers' weights go to
// sim0 than -ngl 5 sends there, and the text is the cpu's; sim0 alone, with
// no cpu to keep the rest, is refused with the numbers.
TEST_F(CApi, AutoFitOffloadsWhatFits) {
  if (!have_model()) GTEST_SKIP() << "model not found: " << stories_path();
  loom::test::ScopedEnv n("LOOM_SIM_DEVICES", std::optional<std::string>("1"));
  loom::test::ScopedEnv ops("LOOM_SIM_OPS_0",
                            std::optional<std::string>("MUL_MAT,ADD,MUL,RMS_NORM,SOFT_MAX,SILU,GET_ROWS,CONT,CPY,SCALE"));
  loom::test::ScopedEnv host("LOOM_SIM_HOST_0", std::nullopt);
  loom::test::ScopedEnv mem("LOOM_SIM_MEMORY_0", std::optional<std::string>("2600000"));
  loom_registry_options_t o;
  loom_registry_options_init(&o);
  const char* paths[] = {LOOM_TEST_PLUGIN_DIR, LOOM_TEST_SIM_DIR};
  o.plugin_paths = paths;
  o.n_plugin_paths = 2;
  loom_registry_t* reg = nullptr;
  Status so(loom_registry_open(&o, &reg));
  ASSERT_TRUE(so.ok()) << so.text();
  loom_devices_t* alone = nullptr;
  Status sa(loom_devices_select(reg, "sim0", &alone));
  ASSERT_TRUE(sa.ok()) << sa.text();
  loom_model_params_t p;
  loom_model_params_init(&p);
  p.n_gpu_layers = -1;
  loom_model_t* m = nullptr;
  EXPECT_FAILS(loom_model_load(alone, stories_path().c_str(), &p, &m), LOOM_STATUS_RESOURCE_EXHAUSTED,
               "does not fit: sim0 needs");
  ASSERT_EQ(m, nullptr);
  loom_devices_free(alone);

  loom_devices_t* devs = nullptr;
  Status sd(loom_devices_select(reg, "sim0,cpu", &devs));
  ASSERT_TRUE(sd.ok()) << sd.text();
  // The bytes copied to sim0 (its progress calls' total).
  uint64_t to_sim0 = 0;
  p.progress = [](uint64_t, uint64_t total, const char* device, void* user) {
    if (std::string(device) == "sim0") *static_cast<uint64_t*>(user) = total;
  };
  p.progress_user_data = &to_sim0;
  p.n_gpu_layers = 5;
  Status s5(loom_model_load(devs, stories_path().c_str(), &p, &m));
  ASSERT_TRUE(s5.ok()) << s5.text();
  loom_model_free(m);
  const uint64_t all_layers = to_sim0;
  to_sim0 = 0;
  p.n_gpu_layers = -1;
  Status sl(loom_model_load(devs, stories_path().c_str(), &p, &m));
  ASSERT_TRUE(sl.ok()) << sl.text();
  EXPECT_GT(to_sim0, 0u) << "no weights copied to sim0";
  EXPECT_LT(to_sim0, all_layers);
  loom_session_t* s = nullptr;
  Status ss(loom_session_create(m, nullptr, &s));
  ASSERT_TRUE(ss.ok()) << ss.text();
  loom_generate_params_t g;
  loom_generate_params_init(&g);
  g.n_predict = 24;
  std::string text;
  g.on_piece = [](const char* piece, size_t len, void* user) {
    static_cast<std::string*>(user)->append(piece, len);
    return true;
  };
  g.user_data = &text;
  Status sg(loom_session_generate(s, "", &g, nullptr));
  EXPECT_TRUE(sg.ok()) << sg.text();
  loom_session_free(s);
  loom_model_free(m);
  loom_devices_free(devs);
  loom_registry_close(reg);
  // The cpu alone gives the same text.
  loom_model_t* cm = nullptr;
  Status sc(loom_model_load(cpu(), stories_path().c_str(), nullptr, &cm));
  ASSERT_TRUE(sc.ok()) << sc.text();
  loom_session_t* cs = nullptr;
  Status scs(loom_session_create(cm, nullptr, &cs));
  ASSERT_TRUE(scs.ok()) << scs.text();
  std::string want;
  g.user_data = &want;
  Status scg(loom_session_generate(cs, "", &g, nullptr));
  EXPECT_TRUE(scg.ok()) << scg.text();
  EXPECT_EQ(text, want);
  loom_session_free(cs);
  loom_model_free(cm);
}

TEST_F(CApi, ProgressEndsWithEverythingDone) {
  if (!have_model()) GTEST_SKIP() << "model not found: " << stories_path();
  struct Seen {
    int calls = 0;
    uint64_t done = 0, total = 0;
    std::string device;
  } seen;
  loom_model_params_t p;
  loom_model_params_init(&p);
  p.n_threads = 1;
  p.progress = [](uint64_t done, uint64_t total, const char* device, void* user) {
    auto* s = static_cast<Seen*>(user);
    ++s->calls;
    s->done = done;
    s->total = total;
    s->device = device;
  };
  p.progress_user_data = &seen;
  loom_model_t* m = nullptr;
  Status st(loom_model_load(cpu(), stories_path().c_str(), &p, &m));
  ASSERT_TRUE(st.ok()) << st.text();
  EXPECT_GE(seen.calls, 1);
  EXPECT_GT(seen.total, 0u);
  EXPECT_EQ(seen.done, seen.total);
  EXPECT_EQ(seen.device, "cpu");
  loom_model_free(m);
}

TEST_F(CApiModel, ModelQueries) {
  EXPECT_EQ(loom_model_n_vocab(model_), 512);
  EXPECT_GT(loom_model_n_ctx_train(model_), 0);
  EXPECT_STREQ(loom_model_architecture(model_), "llama");
  EXPECT_EQ(loom_model_token_bos(model_), 1);
  EXPECT_TRUE(loom_model_token_is_eog(model_, 2));
  EXPECT_FALSE(loom_model_token_is_eog(model_, 100));
  EXPECT_FALSE(loom_model_token_is_eog(model_, -5));
  EXPECT_FALSE(loom_model_token_is_eog(model_, 1 << 30));
}

TEST_F(CApiModel, TokenizeDetokenizeRoundTrip) {
  const std::string text = "Once upon a time, there was a cat.";
  size_t n = 0;
  Status q(loom_model_tokenize(model_, text.data(), text.size(), LOOM_TOKENIZE_ADD_SPECIAL, nullptr, 0, &n));
  ASSERT_TRUE(q.ok()) << q.text();
  ASSERT_GT(n, 2u);
  std::vector<int32_t> ids(n);
  size_t n2 = 0;
  EXPECT_FAILS(loom_model_tokenize(model_, text.data(), text.size(), LOOM_TOKENIZE_ADD_SPECIAL, ids.data(), n - 1, &n2),
               LOOM_STATUS_RESOURCE_EXHAUSTED, "needs " + std::to_string(n));
  EXPECT_EQ(n2, n);
  Status ok(loom_model_tokenize(model_, text.data(), text.size(), LOOM_TOKENIZE_ADD_SPECIAL, ids.data(), n, &n2));
  ASSERT_TRUE(ok.ok()) << ok.text();
  EXPECT_EQ(ids[0], loom_model_token_bos(model_));
  // Without ADD_SPECIAL there is no BOS.
  size_t n3 = 0;
  Status plain(loom_model_tokenize(model_, text.data(), text.size(), 0, nullptr, 0, &n3));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(n3, n - 1);

  char buf[256];
  size_t len = 0;
  Status d(loom_model_detokenize(model_, ids.data(), ids.size(), buf, sizeof buf, &len));
  ASSERT_TRUE(d.ok()) << d.text();
  EXPECT_EQ(std::string(buf, len), text);
  EXPECT_FAILS(loom_model_detokenize(model_, ids.data(), ids.size(), buf, 3, &len), LOOM_STATUS_RESOURCE_EXHAUSTED,
               "holds 3 bytes");

  // Pieces: the first word keeps SentencePiece's space; BOS prints nothing.
  Status p(loom_model_token_to_piece(model_, ids[1], buf, sizeof buf, &len));
  ASSERT_TRUE(p.ok()) << p.text();
  EXPECT_EQ(std::string(buf, len), " Once");
  Status b(loom_model_token_to_piece(model_, ids[0], buf, sizeof buf, &len));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(len, 0u);
}

TEST_F(CApiModel, TokenizerBadArguments) {
  size_t n = 0;
  char buf[8];
  EXPECT_FAILS(loom_model_tokenize(nullptr, "a", 1, 0, nullptr, 0, &n), LOOM_STATUS_INVALID_ARGUMENT, "model is NULL");
  EXPECT_FAILS(loom_model_tokenize(model_, nullptr, 3, 0, nullptr, 0, &n), LOOM_STATUS_INVALID_ARGUMENT, "text is NULL");
  EXPECT_FAILS(loom_model_tokenize(model_, "a", 1, 0, nullptr, 0, nullptr), LOOM_STATUS_INVALID_ARGUMENT, "out_n_tokens");
  EXPECT_FAILS(loom_model_tokenize(model_, "a", 1, 64, nullptr, 0, &n), LOOM_STATUS_INVALID_ARGUMENT, "unknown flags 64");
  EXPECT_FAILS(loom_model_tokenize(model_, "abc", 3, 0, nullptr, 5, &n), LOOM_STATUS_INVALID_ARGUMENT, "buffer is NULL");
  EXPECT_FAILS(loom_model_token_to_piece(model_, 512, buf, sizeof buf, &n), LOOM_STATUS_INVALID_ARGUMENT, "512");
  EXPECT_FAILS(loom_model_token_to_piece(model_, -1, buf, sizeof buf, &n), LOOM_STATUS_INVALID_ARGUMENT, "-1");
  EXPECT_FAILS(loom_model_token_to_piece(nullptr, 5, buf, sizeof buf, &n), LOOM_STATUS_INVALID_ARGUMENT, "model is NULL");
  const int32_t bad[] = {1, 9999};
  EXPECT_FAILS(loom_model_detokenize(model_, bad, 2, buf, sizeof buf, &n), LOOM_STATUS_INVALID_ARGUMENT, "9999");
  EXPECT_FAILS(loom_model_detokenize(model_, nullptr, 2, buf, sizeof buf, &n), LOOM_STATUS_INVALID_ARGUMENT,
               "tokens is NULL");
  // An empty sequence is empty text.
  Status e(loom_model_detokenize(model_, nullptr, 0, buf, sizeof buf, &n));
  EXPECT_TRUE(e.ok()) << e.text();
  EXPECT_EQ(n, 0u);
}

// Handles keep what they were made from alive: any release order works.
TEST(CApiLifetime, HandlesOutliveTheirParents) {
  if (!have_model()) GTEST_SKIP() << "model not found: " << stories_path();
  unsetenv("LOOM_DEVICES");
  loom_registry_t* reg = open_registry();
  loom_devices_t* devs = nullptr;
  Status s1(loom_devices_select(reg, "cpu", &devs));
  ASSERT_TRUE(s1.ok());
  loom_registry_close(reg);  // the list keeps the plugins loaded
  loom_model_t* model = nullptr;
  Status s2(loom_model_load(devs, stories_path().c_str(), nullptr, &model));
  ASSERT_TRUE(s2.ok()) << s2.text();
  loom_devices_free(devs);
  loom_session_t* session = nullptr;
  Status s3(loom_session_create(model, nullptr, &session));
  ASSERT_TRUE(s3.ok());
  loom_model_free(model);  // the session keeps the model
  loom_generate_params_t p;
  loom_generate_params_init(&p);
  p.n_predict = 8;
  loom_generate_result_t r;
  loom_generate_result_init(&r);
  Status s4(loom_session_generate(session, "", &p, &r));
  EXPECT_TRUE(s4.ok()) << s4.text();
  EXPECT_EQ(r.n_generated, 8);
  loom_session_free(session);
}

}  // namespace
