// mix_check: the example device next to the cpu plugin in one graph, through
// the installed loom (loom::loom). The graph is
//   y = rms_norm(soft_max(A x B * 0.5))
// The scheduler gives MUL_MAT, SCALE and SOFT_MAX to example0 (it claims
// them) and RMS_NORM, which it does not claim, to the cpu device, and plans
// the copies between example memory and host memory. The result is checked
// against a double-precision host computation.
//   mix_check <libloom-example.so>     exit 0 when the result and the
//                                      placement are right
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "loom/sched/scheduler.hpp"

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "mix_check: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: mix_check <libloom-example.so>");
  loom::registry::Options opts;
  opts.paths = {argv[1]};  // the example; the cpu plugin comes from loom's own folder
  auto reg = loom::registry::Registry::load(opts);
  loom::registry::Device* ex = reg->device("example0");
  loom::registry::Device* cpu = reg->device("cpu");
  if (ex == nullptr || cpu == nullptr) {
    std::string why;
    for (const auto& c : reg->candidates()) why += "\n  " + c.path + ": " + loom::registry::fate_name(c.fate) + " " + c.reason;
    return fail("example0 and cpu must both load:" + why);
  }
  const int64_t K = 37, M = 19, N = 5;
  loom::Context ctx;
  auto a = ctx.new_tensor(LOOM_TYPE_F32, {K, M}, "A");
  auto b = ctx.new_tensor(LOOM_TYPE_F32, {K, N}, "B");
  if (!a.ok() || !b.ok()) return fail("new_tensor");
  for (loom::Tensor* t : {*a, *b}) t->flags |= LOOM_TENSOR_FLAG_INPUT;
  auto mm = loom::op::mul_mat(ctx, *a, *b);
  auto sc = mm.ok() ? loom::op::scale(ctx, *mm, 0.5f) : mm;
  auto sm = sc.ok() ? loom::op::soft_max(ctx, *sc, nullptr, 1.0f) : sc;
  auto y = sm.ok() ? loom::op::rms_norm(ctx, *sm, 1e-6f) : sm;
  if (!y.ok()) return fail(y.status().to_string());
  auto g = loom::Graph::build({*y});
  auto sched = loom::Scheduler::create({ex, cpu});
  if (!g.ok() || !sched.ok()) return fail("graph or scheduler");
  loom::Status st = (*sched)->allocate(*g);
  std::vector<float> av(K * M), bv(K * N);
  for (size_t i = 0; i < av.size(); ++i) av[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = std::cos(0.11f * static_cast<float>(i));
  if (st.ok()) st = loom::tensor_set(*a, av.data(), av.size() * 4);
  if (st.ok()) st = loom::tensor_set(*b, bv.data(), bv.size() * 4);
  if (st.ok()) st = (*sched)->compute(*g);
  if (!st.ok()) return fail(st.to_string());
  std::printf("%s", (*sched)->describe(*g).c_str());

  // Placement: every node on the device that should run it.
  const auto& nodes = g->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int d = (*sched)->device_of(i);
    const bool on_cpu = d >= 0 && (*sched)->devices()[static_cast<size_t>(d)] == cpu;
    const int32_t op = nodes[i]->op;
    if (op == LOOM_OP_RMS_NORM && !on_cpu) return fail("RMS_NORM did not run on cpu");
    if ((op == LOOM_OP_MUL_MAT || op == LOOM_OP_SOFT_MAX || op == LOOM_OP_SCALE) && on_cpu) {
      return fail(std::string("node '") + nodes[i]->name + "' ran on cpu, not on example0");
    }
  }
  // Values: the same graph in double precision.
  std::vector<float> got(M * N);
  st = loom::tensor_get(*y, got.data(), got.size() * 4);
  if (!st.ok()) return fail(st.to_string());
  double worst = 0.0;
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> row(M);
    double max = -INFINITY, sum = 0.0, sq = 0.0;
    for (int64_t m = 0; m < M; ++m) {
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(av[m * K + k]) * bv[n * K + k];
      row[m] = 0.5 * s;
      max = std::max(max, row[m]);
    }
    for (double& v : row) sum += (v = std::exp(v - max));
    for (double& v : row) sq += (v /= sum) * v;
    const double inv = 1.0 / std::sqrt(sq / M + 1e-6);
    for (int64_t m = 0; m < M; ++m) worst = std::max(worst, std::fabs(got[n * M + m] - row[m] * inv));
  }
  std::printf("mix_check: %zu splits, worst error %.3g\n", (*sched)->splits().size(), worst);
  if (!(worst < 1e-5)) return fail("result differs from the host computation");
  if ((*sched)->splits().size() < 2) return fail("expected the graph to be split between example0 and cpu");
  std::printf("mix_check: ok\n");
  return 0;
}
