#include "llm/session/kv_window.hpp"

#include <algorithm>
#include <string>

#include "loom/runtime/ops.hpp"
#include "loom/sched/executor.hpp"

namespace loom::llm {
namespace {

std::string range(int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + ")"; }

// The move graph over `total` rows per kv head: per bounded layer, K and V
// each GET_ROWS(cache, src) -> SET_ROWS(cache, ., dst). Tensors in ctx.
struct MoveGraph {
  Tensor* src = nullptr;  // I32 [total, n_head_kv]: rows read
  Tensor* dst = nullptr;  // I32 [total, n_head_kv]: rows written
  Graph graph;
};

StatusOr<MoveGraph> build_move(Context& ctx, const KvCache& cache, int64_t total) {
  MoveGraph m;
  LOOM_ASSIGN_OR_RETURN(m.src, ctx.new_tensor(LOOM_TYPE_I32, {total, cache.n_head_kv()}, "window_move_src"));
  LOOM_ASSIGN_OR_RETURN(m.dst, ctx.new_tensor(LOOM_TYPE_I32, {total, cache.n_head_kv()}, "window_move_dst"));
  m.src->flags |= LOOM_TENSOR_FLAG_INPUT;
  m.dst->flags |= LOOM_TENSOR_FLAG_INPUT;
  std::vector<Tensor*> outputs;
  for (int64_t il = 0; il < cache.n_layer(); ++il) {
    if (!cache.bounded(il)) continue;
    for (Tensor* t : {cache.k(il), cache.v(il)}) {
      // Read every moved row before writing any: sources and destinations may overlap.
      LOOM_ASSIGN_OR_RETURN(Tensor * rows, op::get_rows(ctx, t, m.src));
      rows->set_name(std::string("window_rows.") + t->name);
      LOOM_ASSIGN_OR_RETURN(Tensor * stored, op::set_rows(ctx, t, rows, m.dst));
      outputs.push_back(stored);
    }
  }
  LOOM_ASSIGN_OR_RETURN(m.graph, Graph::build(outputs));
  return m;
}

struct Rollback {
  Context& c;
  size_t mark;
  ~Rollback() { c.rollback(mark); }
};

}  // namespace

StatusOr<bool> plan_window(KvCache& cache, int32_t seq, int64_t first, int64_t end, WindowMove* move) {
  if (!cache.windowed()) return false;
  const int64_t base = cache.base(seq);
  const int64_t w = cache.window_rows();
  const int64_t need = std::max<int64_t>(0, first - (cache.n_swa() - 1));
  if (end - need > w) {
    return invalid_argument("[llm.kv_window] positions " + range(first, end) + " of sequence " +
                            std::to_string(seq) + " with their window need " + std::to_string(end - need) +
                            " rows; a sliding-window layer holds " + std::to_string(w));
  }
  if (need == first) {
    // No earlier key is needed (a sequence starting over): the rows start here.
    if (first < base || end - base > w) cache.set_base(seq, first);
    return false;
  }
  if (need < base) {
    return invalid_argument("[llm.kv_window] sequence " + std::to_string(seq) + " at position " +
                            std::to_string(first) + " needs the keys of positions " + range(need, first) +
                            ", but its sliding-window rows start at position " + std::to_string(base) +
                            " (they moved on): evaluate the sequence again from position 0");
  }
  if (end - base <= w) return false;
  *move = WindowMove{seq, need, first};
  return true;
}

int64_t window_reusable(const KvCache& cache, int32_t seq, int64_t n) {
  if (!cache.windowed() || n <= 0) return n;
  const int64_t need = std::max<int64_t>(0, n - (cache.n_swa() - 1));
  return need == n || need >= cache.base(seq) ? n : 0;
}

namespace {

// Rows per move graph: the window's slack W - n_swa (>= the batch size), so
// a move's scratch tensors stay near a batch's activations.
int64_t chunk_rows(const KvCache& cache) {
  return std::max<int64_t>(1, std::min(cache.window_rows() - cache.n_swa(), cache.n_swa() - 1));
}

// One graph moving rows src[i] -> dst[i] (the same for every kv head).
Status move_rows(Context& ctx, Scheduler& sched, const KvCache& cache, const std::vector<int32_t>& src,
                 const std::vector<int32_t>& dst) {
  const auto total = static_cast<int64_t>(src.size());
  Rollback rollback{ctx, ctx.checkpoint()};
  LOOM_ASSIGN_OR_RETURN(MoveGraph g, build_move(ctx, cache, total));
  LOOM_RETURN_IF_ERROR(sched.allocate(g.graph));
  std::vector<int32_t> s, d;
  for (int64_t hk = 0; hk < cache.n_head_kv(); ++hk) {
    s.insert(s.end(), src.begin(), src.end());
    d.insert(d.end(), dst.begin(), dst.end());
  }
  LOOM_RETURN_IF_ERROR(tensor_set(g.src, s.data(), s.size() * sizeof(int32_t)));
  LOOM_RETURN_IF_ERROR(tensor_set(g.dst, d.data(), d.size() * sizeof(int32_t)));
  Status st = sched.compute(g.graph);
  if (!st.ok()) return st.with_context("llm.kv_window: moving " + std::to_string(total) + " rows");
  return Status();
}

}  // namespace

Status move_window(Context& ctx, Scheduler& sched, KvCache& cache, const std::vector<WindowMove>& moves) {
  const int64_t w = cache.window_rows();
  const int64_t chunk = chunk_rows(cache);
  for (const WindowMove& m : moves) {
    // Chunks front to back, each its own graph: a chunk's destination lies
    // below every later chunk's source (rows move down by base - old base >= 1).
    const int64_t slot = static_cast<int64_t>(m.seq) * w;
    for (int64_t p0 = m.base; p0 < m.keep_end; p0 += chunk) {
      std::vector<int32_t> src, dst;
      for (int64_t p = p0; p < std::min(p0 + chunk, m.keep_end); ++p) {
        src.push_back(static_cast<int32_t>(slot + p - cache.base(m.seq)));
        dst.push_back(static_cast<int32_t>(slot + p - m.base));
      }
      LOOM_RETURN_IF_ERROR(move_rows(ctx, sched, cache, src, dst));
    }
    cache.set_base(m.seq, m.base);
  }
  return Status();
}

Status reserve_window_move(Context& ctx, Scheduler& sched, const KvCache& cache) {
  if (!cache.windowed() || cache.n_swa() < 2) return Status();
  Rollback rollback{ctx, ctx.checkpoint()};
  LOOM_ASSIGN_OR_RETURN(MoveGraph g, build_move(ctx, cache, chunk_rows(cache)));
  return sched.reserve(g.graph);
}

}  // namespace loom::llm
