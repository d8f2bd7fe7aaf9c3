#include "llm/serve/llama_engine.hpp"

namespace loom::llm::serve {

// Placeholder until the multi-sequence session lands (same commit series).
StatusOr<std::unique_ptr<Engine>> make_llama_engine(std::unique_ptr<LlamaModel>, std::string, const EngineOptions&) {
  return unimplemented("[llm.serve] the llama engine is not built yet");
}

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
    case FinishReason::kNone: break;
  }
  return "none";
}

}  // namespace loom::llm::serve
