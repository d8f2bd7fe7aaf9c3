// How the serve room's route handlers answer on cpp-httplib: a JSON body,
// an OpenAI error object with its HTTP status, and a loom::Status mapped to
// one (INVALID_ARGUMENT 400, RESOURCE_EXHAUSTED 503 "queue_full",
// UNAVAILABLE 503, anything else 500). Internal to tools/loom/serve (the
// only files that include <httplib.h>).
#pragma once

#include <httplib.h>

#include <string>

#include "json.hpp"
#include "loom/runtime/status.hpp"

namespace loom::cli::serve {

void send_json(httplib::Response& res, int status, const Json& body);
// type: OpenAI's ("invalid_request_error", "server_error", ...).
void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param = "", const std::string& code = "");
// param: the request field the status is about ("" for none).
void send_status(httplib::Response& res, const Status& status, const std::string& param = "");
// The HTTP status send_status gives a status code.
int http_status_of(StatusCode code);

}  // namespace loom::cli::serve
