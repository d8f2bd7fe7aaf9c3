// The HTTP tests' setup: a `loom serve` HTTP server (tools/loom/serve/
// http_server.hpp) started in this process on a free port of 127.0.0.1
// over a FakeEngine, and requests sent to it as raw HTTP (raw_http.hpp).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "fake_engine.hpp"
#include "raw_http.hpp"
#include "serve/http_server.hpp"

namespace loom::test {

class ServeHttp : public ::testing::Test {
 protected:
  // Starts the server (with_engine false: as while a model loads).
  void start(cli::serve::ServerOptions o = {}, bool with_engine = true) {
    o.host = "127.0.0.1";
    o.port = 0;
    auto s = cli::serve::HttpServer::bind(o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server = std::move(s).value();
    ASSERT_GT(server->port(), 0);
    ASSERT_TRUE(server->start().ok());
    if (with_engine) server->set_engine(engine);
  }
  void TearDown() override {
    engine->hold(false);
    if (server) server->stop(0);
  }

  HttpReply get(const std::string& path, const std::string& headers = "") {
    return http_exchange(server->port(), http_request("GET", path, "", headers));
  }
  HttpReply post(const std::string& path, const std::string& body, const std::string& headers = "") {
    return http_exchange(server->port(), http_request("POST", path, body, headers));
  }
  static nlohmann::json json_of(const HttpReply& r) {
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.body;
    return j;
  }
  // The OpenAI error object of a reply, checked for its shape.
  static nlohmann::json error_of(const HttpReply& r) {
    nlohmann::json j = json_of(r);
    EXPECT_TRUE(j.contains("error")) << r.body;
    if (!j.contains("error")) return nlohmann::json::object();
    const nlohmann::json& e = j["error"];
    EXPECT_TRUE(e["message"].is_string());
    EXPECT_TRUE(e["type"].is_string());
    EXPECT_TRUE(e.contains("param"));
    EXPECT_TRUE(e.contains("code"));
    EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "", "application/json");
    return e;
  }

  std::shared_ptr<FakeEngine> engine = std::make_shared<FakeEngine>();
  std::unique_ptr<cli::serve::HttpServer> server;
};

inline const char kChatBody[] = R"({"model": "x", "messages": [{"role": "user", "content": "Hi"}]})";

}  // namespace loom::test
