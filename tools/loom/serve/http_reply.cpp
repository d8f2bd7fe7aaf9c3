#include "serve/http_reply.hpp"

#include "serve/openai_response.hpp"

namespace loom::cli::serve {

void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(json_body(body), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param, const std::string& code) {
  send_json(res, status, error_json(message, type, param, code));
}

int http_status_of(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

void send_status(httplib::Response& res, const Status& status, const std::string& param) {
  const int http = http_status_of(status.code());
  std::string code;
  if (status.code() == StatusCode::kResourceExhausted) code = "queue_full";
  if (status.code() == StatusCode::kUnavailable) code = "unavailable";
  send_error(res, http, status.message(), http == 400 ? "invalid_request_error" : "server_error", param, code);
}

}  // namespace loom::cli::serve
