#include "serve/metrics_text.hpp"

#include <cstdio>

namespace loom::cli::serve {
namespace {

void metric(std::string* out, const char* name, const char* type, const char* help, const std::string& value) {
  *out += std::string("# HELP loom_") + name + " " + help + "\n# TYPE loom_" + name + " " + type + "\n" + "loom_" +
          name + " " + value + "\n";
}

std::string real(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string prometheus_text(const llm::serve::EngineMetrics& m) {
  std::string o;
  auto u = [](uint64_t v) { return std::to_string(v); };
  auto i = [](int64_t v) { return std::to_string(v); };
  metric(&o, "requests_total", "counter", "Completion requests accepted by the engine.", u(m.requests_total));
  metric(&o, "requests_rejected_total", "counter", "Completion requests refused (queue full, too long, shut down).",
         u(m.requests_rejected));
  metric(&o, "prompt_tokens_total", "counter", "Prompt tokens computed (cached ones not counted).",
         u(m.prompt_tokens_total));
  metric(&o, "prompt_tokens_cached_total", "counter", "Prompt tokens whose KV was reused from a slot.",
         u(m.prompt_tokens_cached));
  metric(&o, "generated_tokens_total", "counter", "Tokens generated.", u(m.generated_tokens_total));
  metric(&o, "sequences_active", "gauge", "Requests holding a sequence slot.", i(m.sequences_active));
  metric(&o, "sequences_queued", "gauge", "Requests waiting for a slot.", i(m.sequences_queued));
  metric(&o, "slots", "gauge", "Sequence slots of the engine (--parallel).", i(m.slots));
  metric(&o, "kv_cells_used", "gauge", "KV cache rows holding a token, all slots.", i(m.kv_cells_used));
  metric(&o, "kv_cells_total", "gauge", "KV cache rows, all slots.", i(m.kv_cells_total));
  metric(&o, "prompt_seconds_total", "counter", "Wall time of steps that read prompt tokens.",
         real(m.prompt_seconds_total));
  metric(&o, "generation_seconds_total", "counter", "Wall time of steps that decoded.",
         real(m.generation_seconds_total));
  metric(&o, "prompt_tokens_per_second", "gauge", "Prompt tokens computed per second of prompt steps.",
         real(m.prompt_seconds_total > 0 ? static_cast<double>(m.prompt_tokens_total) / m.prompt_seconds_total : 0));
  metric(&o, "generation_tokens_per_second", "gauge", "Tokens generated per second of decoding steps.",
         real(m.generation_seconds_total > 0 ? static_cast<double>(m.generated_tokens_total) /
                                                   m.generation_seconds_total
                                             : 0));
  metric(&o, "steps_total", "counter", "Engine steps (batches) run.", u(m.steps_total));
  return o;
}

}  // namespace loom::cli::serve
