// GET /metrics of `loom serve`: the engine's counters (llm/serve/engine.hpp's
// EngineMetrics) in the Prometheus text exposition format (version 0.0.4),
// every metric with its HELP and TYPE lines and the prefix "loom_". The
// tokens/s gauges are averages over the steps so far (tokens over the wall
// time of the steps that did that work). Pure function; thread-safe.
#pragma once

#include <string>

#include "llm/serve/engine.hpp"

namespace loom::cli::serve {

// The Content-Type of the text.
constexpr const char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

std::string prometheus_text(const llm::serve::EngineMetrics& m);

}  // namespace loom::cli::serve
