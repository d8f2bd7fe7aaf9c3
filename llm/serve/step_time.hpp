// How long a server step takes, learned from the steps run so far, and how
// many prompt tokens a step beside running decodes may take (the engine's
// chunked prefill). A step's time is modelled as fixed + per_token * tokens
// (its products read the weights once for all rows, then pay per row), fitted
// by exponentially weighted least squares over (tokens, seconds) of recent
// steps; steps that built a new graph are not fed in (the engine's choice).
#pragma once

#include <cstdint>

namespace loom::llm::serve {

class StepTimeModel {
 public:
  // One step of `tokens` rows (decodes plus prompt tokens) took `secs`.
  void add(int64_t tokens, double secs);
  // Whether steps of at least two sizes were seen (a slope is known).
  bool known() const;
  double fixed_s() const;      // time of a step of 0 tokens (>= 0)
  double per_token_s() const;  // time each row adds (> 0 once known)
  // The largest step (rows) seen lately: a running maximum that decays as
  // the fit's weights do, so the model is trusted near the sizes it saw.
  double largest_recent() const { return largest_; }

 private:
  static constexpr double kDecay = 0.95;  // weight of the past per step
  double w_ = 0, x_ = 0, y_ = 0, xx_ = 0, xy_ = 0;  // decayed sums
  double largest_ = 0;
};

struct BudgetInputs {
  int64_t decoding = 0;   // sequences decoding this step (> 0)
  int64_t waiting = 0;    // prompts being read
  int64_t n_batch = 256;  // tokens a step at most
  double mixed_step_ratio = 2.0;
};

// Prompt tokens a step beside the running decodes may take: as many as keep
// it within mixed_step_ratio times the same step without them (from the
// model; first_chunk until it is known), a step at most twice the largest
// the model saw lately or the decodes alone (a slope fitted over a narrow
// range of sizes, nearly flat in noise, would otherwise promise room for
// far larger steps than it has timed), but while more prompts wait than
// sequences decode at least min_chunk per waiting prompt (a crowd arriving
// at once is not starved by fast decode steps); a power of two (steps come
// in few shapes, whose graphs the session keeps) in [1, n_batch].
int64_t prefill_budget(const StepTimeModel& model, const BudgetInputs& in, int64_t first_chunk = 8,
                       int64_t min_chunk = 8);

// The largest power of two <= n (1 for n < 2).
int64_t pow2_floor(int64_t n);

}  // namespace loom::llm::serve
