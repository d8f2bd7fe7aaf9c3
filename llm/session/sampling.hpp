// Choosing the next token from logits.
//
// temperature <= 0 is greedy (the largest logit, first on ties; top-k, top-p
// and the seed are then unused). Otherwise: keep the top_k largest logits
// (top_k <= 0: all), softmax at the temperature, keep the smallest set of
// most likely tokens whose probability reaches top_p (top_p >= 1: all), and
// draw from it with a std::mt19937 seeded with `seed`, so a seed replays the
// same text. Not thread-safe (the generator has state).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "llm/tokenizer/tokenizer.hpp"
#include "loom/runtime/status.hpp"

namespace loom::llm {

struct SamplerOptions {
  float temperature = 0.0f;  // greedy by default: reproducible
  int32_t top_k = 40;
  float top_p = 0.95f;
  uint32_t seed = 42;
};

class Sampler {
 public:
  // INVALID_ARGUMENT for a NaN temperature or top_p outside (0, 1].
  static StatusOr<Sampler> create(const SamplerOptions& options);
  TokenId sample(const float* logits, int32_t n_vocab);
  const SamplerOptions& options() const { return options_; }

 private:
  explicit Sampler(const SamplerOptions& o) : options_(o), rng_(o.seed) {}
  SamplerOptions options_;
  std::mt19937 rng_;
  std::vector<std::pair<float, TokenId>> cand_;  // reused scratch
};

// Index of the largest value, first on ties.
TokenId argmax(const float* logits, int32_t n_vocab);

}  // namespace loom::llm
