// Pipelined prefill on simulated devices (issue 15 item 5), not a test.
//
// A stack of layers (per layer: MUL_MAT by a [dim, dim] weight, then
// RMS_NORM) is split evenly over 1, 2 or 3 asynchronous sim devices (their
// weights in each device's memory, so the scheduler runs each layer where
// its weight lives); every sim node sleeps a fixed LOOM_SIM_DELAY_US_<i>, so
// the work per device is known and the machine's noise hardly matters. A
// "prompt" of --batches micro-batches of --tokens tokens runs either one
// graph at a time (Scheduler::compute: each device idles while the others
// work on the same micro-batch) or pipelined (Scheduler::submit for each
// micro-batch, then finish: device k works on micro-batch i while device
// k+1 works on i-1), the two alternating repetition by repetition. Prints a
// markdown table: median wall time over --reps repetitions, the speed-up,
// the ideal pipeline speed-up batches * k / (batches + k - 1) for k devices
// of equal work, and the most sim splits that ran at once (loom.sim.trace).
//
//   build/release/bin/loom_pipeline_bench [--layers 12] [--dim 64] [--tokens 8]
//       [--batches 16] [--delay-us 200] [--reps 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "loom/sched/scheduler.hpp"
#include "tests/sim_plugin/sim_trace.h"

namespace {

using namespace loom;

struct Args {
  int layers = 12, dim = 64, tokens = 8, batches = 16, delay_us = 200, reps = 5;
};

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return false;
    const int v = std::atoi(argv[++i]);
    if (v < 1) return false;
    if (k == "--layers") a->layers = v;
    else if (k == "--dim") a->dim = v;
    else if (k == "--tokens") a->tokens = v;
    else if (k == "--batches") a->batches = v;
    else if (k == "--delay-us") a->delay_us = v;
    else if (k == "--reps") a->reps = v;
    else return false;
  }
  return true;
}

int die(const Status& st) {
  std::fprintf(stderr, "loom_pipeline_bench: %s\n", st.to_string().c_str());
  return 1;
}

struct Result {
  double plain_ms = 0, piped_ms = 0;  // medians
  uint64_t plain_concurrent = 0, piped_concurrent = 0;  // most sim splits running at once
};

// Every micro-batch over `devices` (layers split evenly), one graph at a
// time and pipelined, alternating repetitions so both see the same machine
// load; the medians of a.reps repetitions each.
StatusOr<Result> run(const Args& a, const std::vector<registry::Device*>& devices,
                     const loom_sim_ext_trace_t* trace) {
  Context ctx;
  std::vector<Buffer> buffers;
  std::vector<Tensor*> w;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const size_t k = devices.size() - 1;  // the last is the cpu
  for (int l = 0; l < a.layers; ++l) {
    LOOM_ASSIGN_OR_RETURN(Tensor * t, ctx.new_tensor(LOOM_TYPE_F32, {a.dim, a.dim}, "w" + std::to_string(l)));
    registry::Device* d = devices[static_cast<size_t>(l) * k / static_cast<size_t>(a.layers)];
    LOOM_ASSIGN_OR_RETURN(Buffer b, allocate_tensors(*d, {t}));
    std::vector<float> v(static_cast<size_t>(a.dim) * static_cast<size_t>(a.dim));
    for (float& x : v) x = dist(rng);
    LOOM_RETURN_IF_ERROR(tensor_set(t, v.data(), v.size() * sizeof(float)));
    w.push_back(t);
    buffers.push_back(std::move(b));
  }
  struct Batch {
    Tensor* x;
    Graph graph;
  };
  std::vector<Batch> batches;
  for (int i = 0; i < a.batches; ++i) {
    LOOM_ASSIGN_OR_RETURN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {a.dim, a.tokens}, "x"));
    x->flags |= LOOM_TENSOR_FLAG_INPUT;
    Tensor* h = x;
    for (Tensor* wl : w) {
      LOOM_ASSIGN_OR_RETURN(Tensor * mm, op::mul_mat(ctx, wl, h));
      LOOM_ASSIGN_OR_RETURN(h, op::rms_norm(ctx, mm, 1e-5f));
    }
    LOOM_ASSIGN_OR_RETURN(Graph g, Graph::build({h}));
    batches.push_back({x, std::move(g)});
  }
  LOOM_ASSIGN_OR_RETURN(auto sched, Scheduler::create(devices));
  std::vector<float> input(static_cast<size_t>(a.dim) * static_cast<size_t>(a.tokens));
  for (float& x : input) x = dist(rng);
  std::vector<double> ms[2];
  Result res;
  for (int r = 0; r <= a.reps; ++r) {  // repetition 0 warms up (plans, buffers)
    for (int pipelined = 0; pipelined < 2; ++pipelined) {
      trace->reset();
      const auto t0 = std::chrono::steady_clock::now();
      for (Batch& b : batches) {
        LOOM_RETURN_IF_ERROR(sched->allocate(b.graph));
        LOOM_RETURN_IF_ERROR(sched->set_input(b.x, input.data(), input.size() * sizeof(float)));
        LOOM_RETURN_IF_ERROR(pipelined ? sched->submit(b.graph) : sched->compute(b.graph));
      }
      LOOM_RETURN_IF_ERROR(sched->finish());
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r == 0) continue;
      ms[pipelined].push_back(t);
      uint64_t& c = pipelined ? res.piped_concurrent : res.plain_concurrent;
      c = std::max(c, trace->max_concurrent());
    }
  }
  for (auto& v : ms) std::sort(v.begin(), v.end());
  res.plain_ms = ms[0][ms[0].size() / 2];
  res.piped_ms = ms[1][ms[1].size() / 2];
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: loom_pipeline_bench [--layers N] [--dim N] [--tokens N] [--batches N] [--delay-us N] "
                 "[--reps N]\n");
    return 2;
  }
  // Three asynchronous sim devices with a fixed delay per node, read at load.
  setenv("LOOM_SIM_DEVICES", "3", 1);
  setenv("LOOM_SIM_ASYNC", "1", 1);
  for (int i = 0; i < 3; ++i) {
    setenv(("LOOM_SIM_DELAY_US_" + std::to_string(i)).c_str(), std::to_string(a.delay_us).c_str(), 1);
  }
  registry::Options o;
  o.paths = {std::string(LOOM_BENCH_SIM_DIR) + "/libloom-sim.so", std::string(LOOM_BENCH_PLUGIN_DIR) + "/libloom-cpu.so"};
  o.use_env = false;
  o.search_library_dir = false;
  o.search_install_dir = false;
  auto reg = registry::Registry::load(o);
  for (const char* n : {"sim0", "sim1", "sim2", "cpu"}) {
    if (!reg->device(n)) {
      std::fprintf(stderr, "loom_pipeline_bench: device %s not loaded (build the loom-sim and loom-cpu targets)\n", n);
      return 1;
    }
  }
  std::printf("layers %d (MUL_MAT + RMS_NORM each), dim %d, %d micro-batches of %d tokens, %d us per sim node, "
              "median of %d\n\n",
              a.layers, a.dim, a.batches, a.tokens, a.delay_us, a.reps);
  const auto* trace = static_cast<const loom_sim_ext_trace_t*>(
      reg->device("sim0")->extension(LOOM_SIM_EXT_TRACE, LOOM_SIM_EXT_TRACE_VERSION));
  if (!trace) {
    std::fprintf(stderr, "loom_pipeline_bench: the sim plugin has no loom.sim.trace extension\n");
    return 1;
  }
  std::printf("| sim devices | one graph at a time (ms) | pipelined (ms) | speed-up | ideal | "
              "most sims busy at once (plain / pipelined) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int k = 1; k <= 3; ++k) {
    std::vector<registry::Device*> devices;
    for (int i = 0; i < k; ++i) devices.push_back(reg->device("sim" + std::to_string(i)));
    devices.push_back(reg->device("cpu"));
    auto r = run(a, devices, trace);
    if (!r.ok()) return die(r.status());
    const double ideal = static_cast<double>(a.batches) * k / (a.batches + k - 1);
    std::printf("| %d | %.1f | %.1f | %.2f | %.2f | %llu / %llu |\n", k, r->plain_ms, r->piped_ms,
                r->plain_ms / r->piped_ms, ideal, static_cast<unsigned long long>(r->plain_concurrent),
                static_cast<unsigned long long>(r->piped_concurrent));
  }
  return 0;
}
