// The window of a windowed KV cache's local layers (KvCache's class
// comment): which base a slot's local rows need before a batch writes
// positions [first, end) of it, and the move that gets them there.
//
// A token at position p attends to positions [p - n_swa + 1, p], so a batch
// starting at `first` needs positions [need, first) with need = max(0, first
// - n_swa + 1) still in the slot's rows: rows hold [base, base + W). While
// end - base <= W the batch writes in place; past that the rows of [need,
// first) move to the slot's front and base becomes need. A batch whose
// needed positions lie below base (a sequence rewound to an earlier
// position after its rows moved on) is refused: those keys are gone, the
// caller recomputes the sequence from position 0 (a batch starting at 0
// needs nothing and resets base).
#pragma once

#include <cstdint>
#include <vector>

#include "llm/session/kv_cache.hpp"
#include "loom/sched/scheduler.hpp"

namespace loom::llm {

// One slot's new base: rows of positions [base, keep_end) move to the front.
struct WindowMove {
  int32_t seq = 0;
  int64_t base = 0;      // the new base (>= the old one)
  int64_t keep_end = 0;  // positions [base, keep_end) keep their keys
};

// Whether slot seq can take positions [first, end) and how: *move (with
// move->keep_end = first) when its rows must move first, nothing when they
// fit in place or the cache is not windowed. INVALID_ARGUMENT naming the
// positions when the keys [need, first) are gone, or when end - need > W.
// With first == 0 and no move needed, base is set to 0 here.
StatusOr<bool> plan_window(KvCache& cache, int32_t seq, int64_t first, int64_t end, WindowMove* move);

// The longest prefix [0, m) of slot seq's positions [0, n) a batch can
// continue from: n when its rows still hold the window before n (always
// when the cache is not windowed), else 0 (recompute from the start).
int64_t window_reusable(const KvCache& cache, int32_t seq, int64_t n);

// Moves the rows of every bounded layer's K and V and sets the new bases:
// per slot, graphs of GET_ROWS into a scratch tensor and SET_ROWS back (at
// most W - n_swa rows each, front to back), run by sched on the devices the
// cache lives on, so it works wherever the cache is (host, vulkan, cuda, a
// sim device). The graphs' tensors are made in ctx (the model's) and rolled
// back after. Nothing may be in flight on sched.
Status move_window(Context& ctx, Scheduler& sched, KvCache& cache, const std::vector<WindowMove>& moves);

// Sizes sched's compute buffers for a move graph (the largest chunk).
Status reserve_window_move(Context& ctx, Scheduler& sched, const KvCache& cache);

}  // namespace loom::llm
