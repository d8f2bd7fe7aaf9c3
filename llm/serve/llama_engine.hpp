// The real serving engine (engine.hpp) over one loaded llama-family model:
// a LlamaSession with EngineOptions::slots sequence slots and one thread
// that steps every active sequence together.
#pragma once

#include <memory>
#include <string>

#include "llm/model/llama_model.hpp"
#include "llm/serve/engine.hpp"

namespace loom::llm::serve {

// Takes the model (loaded with a tokenizer: llm/model/model_open.hpp's
// load_text_model) and starts the engine's thread. model_id: what /v1/models
// names it (the file's base name). Errors: a KV cache for slots x n_ctx
// that does not fit the devices (RESOURCE_EXHAUSTED naming the bytes),
// options out of range (INVALID_ARGUMENT).
StatusOr<std::unique_ptr<Engine>> make_llama_engine(std::unique_ptr<LlamaModel> model, std::string model_id,
                                                    const EngineOptions& options);

}  // namespace loom::llm::serve
