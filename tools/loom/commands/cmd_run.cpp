// `loom run`: generate text with a llama GGUF model over a device list
// (the scheduler splits each step's graph between the devices). Device
// selection, threads, the model load (with its fit) and llm::generate are
// the same code the C API (include/loom/loom.h, capi/) runs: llm/'s.
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"
#include "json.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/model/model_open.hpp"
#include "llm/placement/fit.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "loom/runtime/types.hpp"
#include "options/arg_parse.hpp"
#include "options/placement_options.hpp"

namespace loom::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  std::string prompt_file;  // -f FILE, or "-" (stdin; also -p -): the prompt, byte for byte
  std::string device;  // "": LOOM_DEVICES, else auto
  int64_t n_predict = 200;
  int64_t n_batch = 32;
  int64_t n_ctx = 0;  // 0: the model's
  int64_t threads = 0;  // 0: the device's default
  int64_t n_gpu_layers = -1;  // -1: as many as fit (llm/placement/fit.hpp)
  bool verbose = false;       // -v: print the fit report
  bool fit_only = false;      // --fit: print the fit report and exit
  PlacementOptions placement;
  loom_type_t kv_type = llm::SessionOptions().kv_type;
  llm::SamplerOptions sampling;
  bool sparse = true;  // --sparse on|off (llm::LoadOptions::sparse)
  int64_t sparse_budget = -1;  // --sparse-budget BYTES (llm::LoadOptions::sparse_budget)
  std::string sparse_profile;  // --sparse-profile FILE (llm::LoadOptions::sparse_profile)
};

// The options (checked by the option table) into *o.
std::string parse_args(const ParsedOptions& p, RunOptions* o) {
  o->model = p.text("--model");
  o->prompt = p.text("--prompt");
  if (o->prompt == "-") {  // the prompt is stdin
    o->prompt.clear();
    o->prompt_file = "-";
  }
  o->prompt_file = p.text("--file", o->prompt_file);
  o->device = p.text("--device");
  o->n_predict = p.integer("--n-predict", o->n_predict);
  o->n_batch = p.integer("--batch", o->n_batch);
  o->n_ctx = p.integer("--ctx", o->n_ctx);
  o->n_gpu_layers = p.integer("--n-gpu-layers", o->n_gpu_layers);
  o->threads = p.integer("--threads", o->threads);
  o->verbose = p.has("--verbose");
  o->fit_only = p.has("--fit");
  o->placement = placement_of(p);
  if (p.has("--kv-type")) parse_kv_type(p.text("--kv-type"), &o->kv_type);
  o->sparse = p.text("--sparse", "on") == "on";
  o->sparse_budget = p.integer("--sparse-budget", o->sparse_budget);
  o->sparse_profile = p.text("--sparse-profile");
  o->sampling.top_k = static_cast<int32_t>(p.integer("--top-k", o->sampling.top_k));
  o->sampling.seed = static_cast<uint32_t>(p.integer("--seed", o->sampling.seed));
  o->sampling.temperature = static_cast<float>(p.number("--temp", o->sampling.temperature));
  o->sampling.top_p = static_cast<float>(p.number("--top-p", o->sampling.top_p));
  return "";
}

}  // namespace

int cmd_run(std::vector<std::string> args) {
  RunOptions o;
  ModelCommand mc;
  const int rc = start_model_command(
      "loom run", kRun, args, [&](const ParsedOptions& p) { return parse_args(p, &o); }, &o.model, &o.device, true,
      &mc);
  if (rc >= 0) return rc;
  if (!o.prompt_file.empty() && !read_text(o.prompt_file, &o.prompt)) {
    return fail("loom run", "cannot read the prompt from '" + o.prompt_file + "'");
  }
  const CommonOptions& common = mc.common;
  const std::vector<registry::Device*>& devices = mc.devices;
  if (o.threads > 0) {
    Status st = llm::set_device_threads(devices, static_cast<int>(o.threads));
    if (!st.ok()) return fail("loom run", st.message());
  }

  llm::LoadOptions lo;
  lo.devices = devices;
  lo.progress = load_progress("loom run");
  lo.n_gpu_layers = o.n_gpu_layers;  // < 0: the load fits (llm/placement/fit.hpp)
  lo.check_fit = true;
  lo.sparse = o.sparse;
  lo.sparse_budget = o.sparse_budget;
  lo.sparse_profile = o.sparse_profile;
  if (std::string e = apply_placement(o.placement, devices, &lo); !e.empty())
    return fail("loom run", e);
  llm::SessionOptions so;
  so.n_ctx = o.n_ctx;
  so.n_batch = o.n_batch;
  so.kv_type = o.kv_type;
  lo.fit_session = llm::fit_session(so);
  if (o.fit_only) {
    auto fit = llm::fit_model(o.model, llm::fit_request(lo));
    if (!fit.ok()) return fail("loom run", fit.status().message());
    std::fputs(fit->report().c_str(), stdout);
    return 0;
  }
  auto model = llm::load_text_model(o.model, lo);
  if (!model.ok()) return fail("loom run", model.status().message());
  if (o.verbose && (*model)->fit()) std::fputs((*model)->fit()->report().c_str(), stderr);
  const llm::Tokenizer* tok = (*model)->tokenizer();
  auto session = llm::LlamaSession::create(model->get(), so);
  if (!session.ok()) return fail("loom run", session.status().message());
  if (o.verbose) {
    std::string reserved;
    const Scheduler& sched = (*session)->scheduler();
    for (size_t i = 0; i < sched.devices().size(); ++i) {
      reserved += (reserved.empty() ? "" : ", ") + sched.devices()[i]->name() + " " +
                  std::to_string(sched.compute_buffer_size(i)) + " bytes";
    }
    std::fprintf(stderr, "fit: placed %s; compute buffers reserved: %s\n", (*model)->placement().c_str(),
                 reserved.c_str());
  }

  llm::GenerateOptions go;
  go.n_predict = static_cast<int32_t>(o.n_predict);
  go.sampling = o.sampling;
  std::function<bool(const std::string&)> on_text;
  if (!common.json) {
    std::fputs(o.prompt.c_str(), stdout);
    std::fflush(stdout);
    on_text = [](const std::string& piece) {
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
      return true;
    };
  }
  auto r = llm::generate(**session, *tok, o.prompt, go, on_text);
  if (!r.ok()) {
    if (!common.json) {
      std::fputs("\n", stdout);  // ends the echoed prompt before the error (stdout may be a file)
      std::fflush(stdout);
    }
    return fail("loom run", r.status().message());
  }
  std::string names;
  for (registry::Device* d : devices) names += (names.empty() ? "" : ",") + d->name();
  const llm::LlamaSession& ses = **session;
  // Bytes per step, rounded to a whole byte (an integer in --json).
  const uint64_t copied_per_token =
      ses.steps() ? static_cast<uint64_t>(std::llround(static_cast<double>(ses.bytes_copied()) /
                                                       static_cast<double>(ses.steps())))
                  : 0;
  const char* stop = r->stopped_at_eos ? "eos" : r->stopped_at_context ? "context" : "length";
  if (common.json) {
    Json out;
    out["model"] = o.model;
    out["architecture"] = (*model)->architecture();
    out["devices"] = Json::array();
    for (registry::Device* d : devices) out["devices"].push_back(d->name());
    out["n_gpu_layers"] = (*model)->n_gpu_layers();
    out["placement"] = (*model)->placement();
    out["kv_type"] = type_name(o.kv_type);
    out["prompt_tokens"] = r->prompt_tokens;
    out["generated_tokens"] = r->generated_tokens;
    out["text"] = r->text;
    out["stop"] = stop;
    out["prompt_tokens_per_s"] = r->prompt_tokens_per_s();
    out["gen_tokens_per_s"] = r->gen_tokens_per_s();
    out["weights_zero_copy"] = (*model)->zero_copy();
    out["splits"] = (*session)->splits_last();
    out["bytes_copied_per_token"] = copied_per_token;
    out["plans_built"] = (*session)->scheduler().plans_built();
    put_json(out);
  } else {
    std::fputs("\n", stdout);
    std::fflush(stdout);
    std::string layers;
    if (!lo.tensor_split.empty() || !lo.overrides.empty()) {
      layers = "; " + (*model)->placement();
    } else if (const registry::Device* off = (*model)->offload_device()) {
      layers = "; " + std::to_string((*model)->n_gpu_layers()) + "/" +
               std::to_string((*model)->hparams().n_layer) + " layers on " + off->name();
    }
    std::fprintf(stderr,
                 "\nloom run: device%s %s%s; prompt %zu tokens, %.1f tokens/s; generated %zu tokens, %.1f tokens/s "
                 "(stopped: %s); %zu splits, %llu bytes copied per step\n",
                 devices.size() > 1 ? "s" : "", names.c_str(), layers.c_str(), r->prompt_tokens.size(),
                 r->prompt_tokens_per_s(), r->generated_tokens.size(), r->gen_tokens_per_s(), stop,
                 ses.splits_last(), static_cast<unsigned long long>(copied_per_token));
  }
  // -v: each device's own account (a Vulkan device's pipeline builds and cache).
  for (registry::Device* d : devices) {
    const std::string details = o.verbose ? device_details(*d) : std::string();
    if (!details.empty()) std::fprintf(stderr, "%s:\n%s", d->name().c_str(), details.c_str());
  }
  return 0;
}

}  // namespace loom::cli
