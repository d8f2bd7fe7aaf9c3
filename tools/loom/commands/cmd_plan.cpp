// `loom plan`: the scheduler's plan of one forward step of a model (or, with
// no model available, of a small synthetic two-matmul graph) over a device
// list, as Graphviz DOT or text: one box per split with the copies between
// them (default), or every node (--detail nodes).
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/placement/fit.hpp"
#include "llm/session/llama_session.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/sched/scheduler.hpp"
#include "options/placement_options.hpp"

namespace loom::cli {
namespace {

struct PlanOptions {
  std::string model;
  std::string device;  // "": LOOM_DEVICES, else auto
  std::string output;  // "" : stdout
  int64_t n_batch = 1;
  int64_t n_gpu_layers = -1;  // -1: as many as fit (llm/placement/fit.hpp)
  bool fit_only = false;      // --fit: the size report only
  PlanDetail detail = PlanDetail::kSplits;
  PlanFormat format = PlanFormat::kDot;
  PlacementOptions placement;
};

// The options (checked by the option table) into *o.
std::string parse_args(const ParsedOptions& p, PlanOptions* o) {
  o->model = p.text("--model");
  o->device = p.text("--device");
  o->output = p.text("--output");
  o->n_batch = p.integer("--batch", o->n_batch);
  o->n_gpu_layers = p.integer("--n-gpu-layers", o->n_gpu_layers);
  o->fit_only = p.has("--fit");
  o->detail = p.text("--detail") == "nodes" ? PlanDetail::kNodes : PlanDetail::kSplits;
  o->format = p.text("--format") == "text" ? PlanFormat::kText : PlanFormat::kDot;
  o->placement = placement_of(p);
  return "";
}

// y = w2 * (w1 * x): x [256, batch], w1 [256, 512], w2 [512, 256]; every
// leaf is an input the scheduler places.
StatusOr<std::string> synthetic_plan(const std::vector<registry::Device*>& devices, const PlanOptions& o) {
  const int64_t batch = o.n_batch;
  Context ctx;
  LOOM_ASSIGN_OR_RETURN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {256, batch}, "x"));
  LOOM_ASSIGN_OR_RETURN(Tensor * w1, ctx.new_tensor(LOOM_TYPE_F32, {256, 512}, "w1"));
  LOOM_ASSIGN_OR_RETURN(Tensor * w2, ctx.new_tensor(LOOM_TYPE_F32, {512, 256}, "w2"));
  for (Tensor* t : {x, w1, w2}) t->flags |= LOOM_TENSOR_FLAG_INPUT;
  LOOM_ASSIGN_OR_RETURN(Tensor * h, op::mul_mat(ctx, w1, x));
  h->set_name("h");
  LOOM_ASSIGN_OR_RETURN(Tensor * y, op::mul_mat(ctx, w2, h));
  y->set_name("y");
  LOOM_ASSIGN_OR_RETURN(Graph graph, Graph::build({y}));
  LOOM_ASSIGN_OR_RETURN(auto sched, Scheduler::create(devices));
  LOOM_RETURN_IF_ERROR(sched->allocate(graph));
  return sched->render(graph, o.detail, o.format);
}

// The plan of one step of the model over the devices (o.n_batch tokens),
// loaded with lo (placed by the fit, whose report goes to stderr).
StatusOr<std::string> model_plan(const llm::LoadOptions& lo, const llm::SessionOptions& so, const PlanOptions& o) {
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<llm::LlamaModel> model, llm::LlamaModel::load(o.model, lo));
  if (model->fit()) std::fputs(model->fit()->report().c_str(), stderr);
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<llm::LlamaSession> session, llm::LlamaSession::create(model.get(), so));
  return session->plan(o.n_batch, o.detail, o.format);
}

}  // namespace

int cmd_plan(std::vector<std::string> args) {
  PlanOptions o;
  ModelCommand mc;
  const int rc = start_model_command(
      "loom plan", kPlan, args, [&](const ParsedOptions& p) { return parse_args(p, &o); }, &o.model, &o.device,
      false, &mc);
  if (rc >= 0) return rc;
  const std::vector<registry::Device*>& devices = mc.devices;

  StatusOr<std::string> dot = std::string();
  if (o.model.empty()) {
    dot = synthetic_plan(devices, o);
  } else {
    llm::LoadOptions lo;
    lo.devices = devices;
    lo.n_gpu_layers = o.n_gpu_layers;  // < 0: the load fits (llm/placement/fit.hpp)
    lo.check_fit = true;
    if (std::string e = apply_placement(o.placement, devices, &lo); !e.empty())
      return fail("loom plan", e);
    llm::SessionOptions so;
    so.n_batch = o.n_batch;
    lo.fit_session = llm::fit_session(so);
    if (o.fit_only) {
      auto fit = llm::fit_model(o.model, llm::fit_request(lo));
      if (!fit.ok()) return fail("loom plan", fit.status().message());
      std::fputs(fit->report().c_str(), stdout);
      return 0;
    }
    dot = model_plan(lo, so, o);
  }
  if (!dot.ok()) return fail("loom plan", dot.status().message());
  if (o.output.empty()) {
    std::fputs(dot->c_str(), stdout);
    return 0;
  }
  std::FILE* f = std::fopen(o.output.c_str(), "wb");
  if (!f) return fail("loom plan", "cannot write " + o.output + ": " + std::strerror(errno));
  const bool ok = std::fwrite(dot->data(), 1, dot->size(), f) == dot->size();
  if (std::fclose(f) != 0 || !ok) return fail("loom plan", "cannot write " + o.output);
  std::fprintf(stderr, "loom plan: %s: %s\n", o.output.c_str(),
               o.model.empty() ? "synthetic two-matmul graph" : o.model.c_str());
  return 0;
}

}  // namespace loom::cli
