#include "llm/serve/step_time.hpp"

#include <algorithm>

namespace loom::llm::serve {

void StepTimeModel::add(int64_t tokens, double secs) {
  if (tokens <= 0 || !(secs >= 0)) return;
  const auto x = static_cast<double>(tokens);
  w_ = kDecay * w_ + 1.0;
  x_ = kDecay * x_ + x;
  y_ = kDecay * y_ + secs;
  xx_ = kDecay * xx_ + x * x;
  xy_ = kDecay * xy_ + x * secs;
  largest_ = std::max(kDecay * largest_, x);
}

bool StepTimeModel::known() const {
  // The weighted spread of the sizes: 0 (up to rounding) for one size, and
  // small once other sizes have decayed away.
  return w_ * xx_ - x_ * x_ > 1e-9 * w_ * xx_ && per_token_s() > 0;
}

double StepTimeModel::per_token_s() const {
  const double var = w_ * xx_ - x_ * x_;
  if (!(var > 0)) return 0;
  return std::max(0.0, (w_ * xy_ - x_ * y_) / var);
}

double StepTimeModel::fixed_s() const {
  if (w_ <= 0) return 0;
  return std::max(0.0, (y_ - per_token_s() * x_) / w_);
}

int64_t pow2_floor(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int64_t prefill_budget(const StepTimeModel& model, const BudgetInputs& in, int64_t first_chunk, int64_t min_chunk) {
  const int64_t cap = std::max<int64_t>(1, in.n_batch);
  const int64_t floor = in.waiting > in.decoding ? std::min(cap, min_chunk * in.waiting) : 1;
  int64_t n = first_chunk;
  if (model.known()) {
    // fixed + per_token * (decoding + n) <= ratio * (fixed + per_token * decoding)
    const double decode_only = model.fixed_s() + model.per_token_s() * static_cast<double>(in.decoding);
    const double room = (in.mixed_step_ratio - 1.0) * decode_only;
    const double tokens = room / model.per_token_s();
    const double decoding = static_cast<double>(in.decoding);
    const double reach = 2.0 * std::max(model.largest_recent(), decoding) - decoding;
    const double allowed = std::min(tokens, reach);
    n = allowed >= static_cast<double>(cap) ? cap : static_cast<int64_t>(allowed);
  }
  return pow2_floor(std::clamp(n, floor, cap));
}

}  // namespace loom::llm::serve
