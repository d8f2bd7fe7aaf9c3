#include "llm/session/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace loom::llm {

TokenId argmax(const float* logits, int32_t n_vocab) {
  TokenId best = 0;
  for (int32_t i = 1; i < n_vocab; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

StatusOr<Sampler> Sampler::create(const SamplerOptions& o) {
  if (std::isnan(o.temperature)) return invalid_argument("[llm.sampler] temperature is NaN");
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) {
    return invalid_argument("[llm.sampler] top_p " + std::to_string(o.top_p) + " must be in (0, 1]");
  }
  return Sampler(o);
}

TokenId Sampler::sample(const float* logits, int32_t n_vocab) {
  if (n_vocab <= 0) return kNoToken;
  if (options_.temperature <= 0.0f) return argmax(logits, n_vocab);
  cand_.clear();
  for (int32_t i = 0; i < n_vocab; ++i) cand_.emplace_back(logits[i], i);
  // Largest first; equal logits keep the smaller id first.
  auto before = [](const std::pair<float, TokenId>& a, const std::pair<float, TokenId>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t k = cand_.size();
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < k) k = static_cast<size_t>(options_.top_k);
  std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(k), cand_.end(), before);
  cand_.resize(k);
  // Softmax at the temperature, relative to the largest logit for stability.
  const double mx = cand_[0].first;
  std::vector<double> p(k);
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += (p[i] = std::exp((cand_[i].first - mx) / options_.temperature));
  size_t keep = k;
  if (options_.top_p < 1.0f) {
    double acc = 0;
    for (size_t i = 0; i < k; ++i) {
      acc += p[i] / sum;
      if (acc >= options_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  std::discrete_distribution<size_t> dist(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(keep));
  return cand_[dist(rng_)].second;
}

}  // namespace loom::llm
