// `loom serve`'s command line: its options through the option table (a bad
// value exits 2 naming the flag), --help, and an address it cannot bind
// (exit 1 naming it). The HTTP layer itself is tested in tests/serve.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "run_loom.hpp"

namespace loom::test {
namespace {

TEST(ServeCli, HelpTellsTheRoutesAndFlags) {
  LoomResult h = run_loom("serve --help");
  EXPECT_EQ(h.exit_code, 0);
  for (const char* s : {"usage: loom serve [options]", "--port N", "--host HOST", "--parallel N", "--api-key KEY",
                        "--max-queue N", "--mixed-step-ratio R", "--timeout S", "/v1/chat/completions", "/health", "/metrics", "SIGTERM"}) {
    EXPECT_NE(h.out.find(s), std::string::npos) << s << " in:\n" << h.out;
  }
  LoomResult all = run_loom("--help");
  EXPECT_NE(all.out.find("  serve "), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("LOOM_API_KEY"), std::string::npos);
}

TEST(ServeCli, BadValuesExitTwoNamingTheFlag) {
  const std::string m = " -m /nonexistent/model.gguf";
  const std::pair<const char*, const char*> cases[] = {
      {"--port 70000", "--port '70000': expected an integer in [0, 65535]"},
      {"--port -1", "--port '-1': expected an integer in [0, 65535]"},
      {"--parallel 0", "--parallel '0': expected an integer in [1, 1024]"},
      {"-np x", "-np 'x': expected an integer in [1, 1024]"},
      {"--timeout 0", "--timeout '0': expected an integer in [1, 86400]"},
      {"--max-queue -1", "--max-queue '-1': expected an integer in [0, 1000000]"},
      {"--mixed-step-ratio 0.5", "--mixed-step-ratio '0.5': expected a number in [1, 1000]"},
      {"--mixed-step-ratio x", "--mixed-step-ratio 'x': expected a number in [1, 1000]"},
      {"-c 0", "-c '0': expected an integer >= 1"},
      {"--host ''", "--host '': expected an address"},
      {"--api-key ''", "--api-key '': expected a key"},
      {"--temp 0.5", "unexpected argument '--temp'"},
  };
  for (const auto& [args, msg] : cases) {
    LoomResult r = run_loom(std::string("serve ") + args + m);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(msg), std::string::npos) << args << ": " << r.out;
  }
}

TEST(ServeCli, APortInUseIsAnError) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  // The socket is bound before the model is read: no model needed.
  LoomResult r = run_loom("serve -m /nonexistent/model.gguf --device cpu --port " + std::to_string(port), "", true, 60);
  ::close(fd);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos) << r.out;
}

}  // namespace
}  // namespace loom::test
