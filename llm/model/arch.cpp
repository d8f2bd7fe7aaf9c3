#include "llm/model/arch.hpp"

#include "loom/plugin.h"

namespace loom::llm {
namespace {

// mistral files say "llama" (their sliding window key is ignored, see
// llama_hparams.cpp): nothing of their own here.
constexpr ArchTraits kArchs[] = {
    // name     rope mode              rope_freqs qkv_bias qk_norm fused_qkv fused_gate_up
    {"llama", LOOM_ROPE_MODE_NORMAL, true, false, false, false, false},
    {"qwen2", LOOM_ROPE_MODE_NEOX, false, true, false, false, false},
    {"qwen3", LOOM_ROPE_MODE_NEOX, false, false, true, false, false},
    // Phi-3 (mini, medium; 4k contexts): longrope files (128k) are refused by
    // the rope reader, naming the key.
    {"phi3", LOOM_ROPE_MODE_NEOX, false, false, false, true, true},
};

}  // namespace

const ArchTraits* find_arch(std::string_view name) {
  for (const ArchTraits& a : kArchs) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::string supported_archs() {
  std::string s;
  for (const ArchTraits& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

}  // namespace loom::llm
