// What the C API tests share (capi_test.cpp: records, selection, model
// load, tokenizer; capi_session_test.cpp: session, sequence slots, sampler,
// generate): an owning status wrapper, EXPECT_FAILS, the registry over the
// test plugin folder, and the fixtures CApi (a registry and the cpu device)
// and CApiModel (stories260K loaded and a session over it).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "llm/llm_test_util.hpp"
#include "loom/loom.h"

namespace loom::capi_test {

using loom::test::stories_path;

// Owns a status; prints as "CODE: message".
struct Status {
  loom_status_t* s;
  explicit Status(loom_status_t* st) : s(st) {}
  ~Status() { loom_status_free(s); }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;
  bool ok() const { return s == nullptr; }
  loom_status_code_t code() const { return loom_status_code(s); }
  std::string message() const { return loom_status_message(s); }
  std::string text() const { return std::string(loom_status_code_name(code())) + ": " + message(); }
};

#define EXPECT_FAILS(call, want_code, needle)                                          \
  do {                                                                                 \
    Status st_(call);                                                                  \
    EXPECT_EQ(st_.code(), want_code) << st_.text();                                    \
    EXPECT_NE(st_.message().find(needle), std::string::npos) << st_.text();            \
  } while (0)

inline bool have_model() {
  struct stat st;
  return ::stat(stories_path().c_str(), &st) == 0;
}

inline loom_registry_t* open_registry() {
  loom_registry_options_t o;
  loom_registry_options_init(&o);
  const char* paths[] = {LOOM_TEST_PLUGIN_DIR};
  o.plugin_paths = paths;
  o.n_plugin_paths = 1;
  loom_registry_t* reg = nullptr;
  Status st(loom_registry_open(&o, &reg));
  EXPECT_TRUE(st.ok()) << st.text();
  return reg;
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("LOOM_DEVICES");
    reg_ = open_registry();
    ASSERT_NE(reg_, nullptr);
  }
  void TearDown() override {
    loom_devices_free(devs_);
    loom_registry_close(reg_);
  }
  loom_devices_t* cpu() {
    if (devs_ == nullptr) {
      Status st(loom_devices_select(reg_, "cpu", &devs_));
      EXPECT_TRUE(st.ok()) << st.text();
    }
    return devs_;
  }
  loom_registry_t* reg_ = nullptr;
  loom_devices_t* devs_ = nullptr;
};

// A model and session over the cpu device.
class CApiModel : public CApi {
 protected:
  void SetUp() override {
    if (!have_model()) GTEST_SKIP() << "model not found: " << stories_path();
    CApi::SetUp();
    Status st(loom_model_load(cpu(), stories_path().c_str(), nullptr, &model_));
    ASSERT_TRUE(st.ok()) << st.text();
    Status ss(loom_session_create(model_, nullptr, &session_));
    ASSERT_TRUE(ss.ok()) << ss.text();
  }
  void TearDown() override {
    loom_session_free(session_);
    loom_model_free(model_);
    CApi::TearDown();
  }
  std::string generate(const char* prompt, int32_t n, loom_generate_result_t* result = nullptr) {
    loom_generate_params_t p;
    loom_generate_params_init(&p);
    p.n_predict = n;
    std::string text;
    p.on_piece = [](const char* piece, size_t len, void* user) {
      static_cast<std::string*>(user)->append(piece, len);
      return true;
    };
    p.user_data = &text;
    Status st(loom_session_generate(session_, prompt, &p, result));
    EXPECT_TRUE(st.ok()) << st.text();
    return text;
  }
  loom_model_t* model_ = nullptr;
  loom_session_t* session_ = nullptr;
};

}  // namespace loom::capi_test
