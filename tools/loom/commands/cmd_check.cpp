// `loom check`: compute a small graph on one device through the
// single-device API path and compare it with a plain host computation.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli.hpp"
#include "json.hpp"
#include "loom/sched/executor.hpp"
#include "loom/runtime/ops.hpp"

namespace loom::cli {
namespace {

constexpr int64_t kK = 37, kM = 11, kN = 5;
constexpr float kScale = 0.125f, kEps = 1e-6f;

// y = rms_norm(soft_max(scale * (W^T x))) per column, in double.
std::vector<double> reference(const std::vector<float>& w, const std::vector<float>& x) {
  std::vector<double> out(kM * kN);
  for (int64_t n = 0; n < kN; ++n) {
    std::vector<double> row(kM);
    double mx = -INFINITY;
    for (int64_t m = 0; m < kM; ++m) {
      double acc = 0;
      for (int64_t k = 0; k < kK; ++k) acc += static_cast<double>(w[m * kK + k]) * x[n * kK + k];
      row[m] = acc * kScale;
      mx = std::max(mx, row[m]);
    }
    double sum = 0;
    for (auto& v : row) sum += (v = std::exp(v - mx));
    double ss = 0;
    for (auto& v : row) {
      v /= sum;
      ss += v * v;
    }
    double inv = 1.0 / std::sqrt(ss / kM + kEps);
    for (int64_t m = 0; m < kM; ++m) out[n * kM + m] = row[m] * inv;
  }
  return out;
}

// The check graph: out = rms_norm(soft_max(scale(mul_mat(w, x)))).
struct CheckGraph {
  Tensor* w = nullptr;
  Tensor* x = nullptr;
  Tensor* out = nullptr;
};

StatusOr<CheckGraph> build_check(Context& ctx) {
  CheckGraph c;
  LOOM_ASSIGN_OR_RETURN(c.w, ctx.new_tensor(LOOM_TYPE_F32, {kK, kM}, "w"));
  LOOM_ASSIGN_OR_RETURN(c.x, ctx.new_tensor(LOOM_TYPE_F32, {kK, kN}, "x"));
  LOOM_ASSIGN_OR_RETURN(Tensor * y, op::mul_mat(ctx, c.w, c.x));
  LOOM_ASSIGN_OR_RETURN(Tensor * s, op::scale(ctx, y, kScale));
  LOOM_ASSIGN_OR_RETURN(Tensor * p, op::soft_max(ctx, s, nullptr, 1.0f));
  LOOM_ASSIGN_OR_RETURN(c.out, op::rms_norm(ctx, p, kEps));
  c.out->set_name("out");
  return c;
}

bool device_runs_check(registry::Device* dev) {
  Context ctx;
  auto c = build_check(ctx);
  if (!c.ok()) return false;
  auto g = Graph::build({c->out});
  if (!g.ok()) return false;
  for (Tensor* t : g->nodes()) {
    if (t->op == LOOM_OP_RESHAPE || t->op == LOOM_OP_VIEW || t->op == LOOM_OP_PERMUTE ||
        t->op == LOOM_OP_TRANSPOSE) {
      continue;
    }
    if (!dev->supports_op(t)) return false;
  }
  return true;
}

Status run_check(registry::Device* dev, double* max_diff) {
  Context ctx;
  LOOM_ASSIGN_OR_RETURN(CheckGraph c, build_check(ctx));
  Tensor* w = c.w;
  Tensor* x = c.x;
  Tensor* r = c.out;
  LOOM_ASSIGN_OR_RETURN(Graph g, Graph::build({r}));
  LOOM_ASSIGN_OR_RETURN(auto ex, Executor::create(dev));
  LOOM_RETURN_IF_ERROR(ex->allocate(g));

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> hw(kK * kM), hx(kK * kN), out(kM * kN);
  for (auto& v : hw) v = dist(rng);
  for (auto& v : hx) v = dist(rng);
  LOOM_RETURN_IF_ERROR(tensor_set(w, hw.data(), hw.size() * sizeof(float)));
  LOOM_RETURN_IF_ERROR(tensor_set(x, hx.data(), hx.size() * sizeof(float)));
  LOOM_RETURN_IF_ERROR(ex->compute(g));
  LOOM_RETURN_IF_ERROR(tensor_get(r, out.data(), out.size() * sizeof(float)));
  std::vector<double> ref = reference(hw, hx);
  *max_diff = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double d = std::fabs(out[i] - ref[i]);
    if (!(d <= *max_diff)) *max_diff = std::isnan(d) ? INFINITY : d;
  }
  return Status();
}

}  // namespace

int cmd_check(std::vector<std::string> args) {
  CommonOptions opts;
  ParsedOptions parsed;
  if (std::string error = parse_command(kCheck, args, &opts, &parsed); !error.empty()) {
    std::fprintf(stderr, "loom check: %s (try 'loom check --help')\n", error.c_str());
    return 2;
  }
  const std::string device_name = parsed.text("--device");
  auto reg = load_registry(opts, device_name);
  registry::Device* dev = nullptr;
  if (!device_name.empty()) {
    auto sel = reg->select(device_name);
    if (!sel.ok()) {
      std::fprintf(stderr, "loom check: %s\n", sel.status().message().c_str());
      return 1;
    }
    dev = sel->front();
  } else {
    auto sel = reg->select_from_env();
    if (!sel.ok() || sel->empty()) {
      std::fprintf(stderr, "loom check: no device available: %s (see 'loom devices')\n",
                   sel.ok() ? "none found" : sel.status().message().c_str());
      return 1;
    }
    // Policies list accelerators (e.g. a matmul-only BLAS device) before the
    // CPU; a single-device run needs one that can run every node.
    for (registry::Device* d : *sel) {
      if (device_runs_check(d)) {
        dev = d;
        break;
      }
    }
    if (!dev) {
      std::fprintf(stderr, "loom check: none of the selected devices runs every op of the check graph\n");
      return 1;
    }
  }
  double max_diff = 0;
  Status st = run_check(dev, &max_diff);
  const double kTol = 1e-4;
  bool pass = st.ok() && max_diff <= kTol;
  if (opts.json) {
    Json out;
    out["device"] = dev->name();
    out["ok"] = pass;
    if (st.ok()) {
      out["max_abs_diff"] = max_diff;
      out["tolerance"] = kTol;
    } else {
      out["error"] = st.to_string();
    }
    put_json(out);
  } else if (!st.ok()) {
    std::fprintf(stderr, "loom check: device %s: %s\n", dev->name().c_str(), st.to_string().c_str());
  } else {
    std::printf("device %s: matmul+scale+softmax+rms_norm %s (max abs diff %.3g, tolerance %.0e)\n",
                dev->name().c_str(), pass ? "OK" : "MISMATCH", max_diff, kTol);
  }
  return pass ? 0 : 1;
}

}  // namespace loom::cli
