// The real `loom serve` process over stories260K, spoken to in raw HTTP
// (what a client library hides): a client that hangs up mid-stream frees
// its sequence (GET /metrics shows none active and the slot serves the next
// request), a prompt-cache hit shows in the usage, SIGTERM during a stream
// ends the stream with [DONE] and the process with exit status 0.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "../serve/raw_http.hpp"
#include "cli/run_loom.hpp"

extern char** environ;

namespace loom::test {
namespace {

using namespace std::chrono_literals;

// `loom serve` in a child process on a free port; stopped (SIGKILL) at the end
// unless the test waited for it.
class ServeProcess : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef LOOM_TEST_HAVE_SERVE
    GTEST_SKIP() << "loom serve was not built (needs libcpp-httplib-dev)";
#endif
    if (!std::ifstream(stories_model()).good())
      GTEST_SKIP() << stories_model() << " not found (set LOOM_MODELS_DIR)";
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    const std::string bin = std::string(LOOM_TEST_BIN_DIR) + "/loom";
    const std::string model = stories_model();
    std::vector<std::string> args = {bin, "serve", "-m", model, "--device", "cpu", "--port", "0", "--parallel", "2",
                                     "-c", "1024"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    out_ = ::fdopen(out[0], "r");
    char line[512];
    const std::regex listening("listening on http://127\\.0\\.0\\.1:(\\d+)");
    while (port_ == 0 && std::fgets(line, sizeof line, out_) != nullptr) {
      std::cmatch m;
      if (std::regex_search(line, m, listening)) port_ = std::stoi(m[1].str());
    }
    ASSERT_GT(port_, 0) << "loom serve printed no port";
    for (int i = 0; i < 600 && health() != 200; ++i) std::this_thread::sleep_for(50ms);
    ASSERT_EQ(health(), 200);
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ != nullptr) std::fclose(out_);
  }

  int health() { return http_exchange(port_, http_request("GET", "/health"), 2000).status; }
  // A metric's value from GET /metrics (-1 when absent).
  double metric(const std::string& name) {
    const HttpReply r = http_exchange(port_, http_request("GET", "/metrics"));
    const std::regex re("\n" + name + " ([0-9.e+-]+)");
    std::smatch m;
    return std::regex_search(r.body, m, re) ? std::stod(m[1].str()) : -1;
  }
  // Exit status after waiting up to `limit` (-1: still running or killed).
  int wait_exit(std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(50ms);
    }
    return -1;
  }

  static std::string stream_body(int max_tokens) {
    return R"({"prompt": "Once upon a time", "max_tokens": )" + std::to_string(max_tokens) +
           R"(, "temperature": 0, "stream": true, "ignore_eos": true})";
  }

  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  int port_ = 0;
};

TEST_F(ServeProcess, AClientThatHangsUpFreesItsSequence) {
  RawConnection c(port_);
  ASSERT_TRUE(c.send(http_request("POST", "/v1/completions", stream_body(1000))));
  const std::string got = c.read(30000, "data: {\"id\"");
  ASSERT_NE(got.find("200 OK"), std::string::npos) << got;
  EXPECT_EQ(metric("loom_sequences_active"), 1);
  c.close();  // mid-stream: 1000 tokens take far longer than this test waits
  double active = 1;
  for (int i = 0; i < 100 && (active = metric("loom_sequences_active")) != 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(active, 0) << "the sequence of a client that went away is still active";
  EXPECT_LT(metric("loom_generated_tokens_total"), 1000);
  // Both slots serve again; the second request reuses the first's prompt.
  const HttpReply r = http_exchange(port_, http_request("POST", "/v1/completions",
                                                        R"({"prompt": "Once upon a time", "max_tokens": 4,
                                                            "temperature": 0})"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"cached_tokens\":"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("\"cached_tokens\":0"), std::string::npos) << "the prompt was read before: " << r.body;
}

TEST_F(ServeProcess, SigtermDuringAStreamEndsItAndExitsZero) {
  RawConnection c(port_);
  ASSERT_TRUE(c.send(http_request("POST", "/v1/completions", stream_body(1000))));
  ASSERT_NE(c.read(30000, "data: {\"id\"").find("data: "), std::string::npos);
  ASSERT_EQ(::kill(pid_, SIGTERM), 0);
  const std::string all = c.read(30000);  // until the server closes
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_NE(all.find("data: [DONE]"), std::string::npos) << all.substr(all.size() > 2000 ? all.size() - 2000 : 0);
  EXPECT_EQ(wait_exit(30s), 0);
}

}  // namespace
}  // namespace loom::test
