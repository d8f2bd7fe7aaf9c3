// What the llm tests share: where the models are and stories260K's
// published greedy text.
#pragma once

#include <cstdlib>
#include <string>

#ifndef LOOM_MODELS_DIR_DEFAULT
#define LOOM_MODELS_DIR_DEFAULT "../shared/models"
#endif

namespace loom::test {

// The start of the model author's published greedy output from BOS
// (DESIGN.md section 7).
inline constexpr const char kPublished[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, "
    "she saw a big, red ball. She wanted to play with it, but it was too high.";

// LOOM_MODELS_DIR, else the build's default (../shared/models).
// The ops the simulated device (tests/sim_plugin) runs in the split-model tests.
inline constexpr char kSimOps[] = "MUL_MAT,ADD,MUL,RMS_NORM,SOFT_MAX,SILU,GET_ROWS,CONT,CPY,SCALE";

inline std::string models_dir() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return env && *env ? env : LOOM_MODELS_DIR_DEFAULT;
}

inline std::string stories_path() { return models_dir() + "/stories260K.gguf"; }

// A layer's Q weight: wq, or the wqkv holding Q's rows (a file's, or the
// loader's join of Q, K and V: LlamaModel::plan_joined_qkv).
template <typename Layer>
const auto* q_weight(const Layer& l) {
  return l.wq ? l.wq : l.wqkv;
}

}  // namespace loom::test
