#include "llm/model/arch.hpp"

#include "loom/plugin.h"

namespace loom::llm {
namespace {

// mistral files say "llama" (their sliding window key is ignored, see
// llama_hparams.cpp): nothing of their own here.
constexpr ArchTraits kArchs[] = {
    // name     rope mode              rope_freqs qkv_bias qk_norm fused_qkv fused_gate_up gemma swa_period
    {"llama", LOOM_ROPE_MODE_NORMAL, true, false, false, false, false, false, 0},
    {"qwen2", LOOM_ROPE_MODE_NEOX, false, true, false, false, false, false, 0},
    {"qwen3", LOOM_ROPE_MODE_NEOX, false, false, true, false, false, false, 0},
    // Phi-3 (mini, medium; 4k contexts): longrope files (128k) are refused by
    // the rope reader, naming the key. Its sliding_window key is ignored, as
    // llama.cpp does.
    {"phi3", LOOM_ROPE_MODE_NEOX, false, false, false, true, true, false, 0},
    // Gemma 3 (text): Q/K norms, five local (sliding-window) layers to one global.
    {"gemma3", LOOM_ROPE_MODE_NEOX, false, false, true, false, false, true, 6},
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
