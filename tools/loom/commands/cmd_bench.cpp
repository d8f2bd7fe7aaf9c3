// `loom bench`: prompt-processing and generation speed of a llama GGUF model,
// like llama-bench. Each repetition starts from an empty KV cache, times the
// prefill of -p fixed pseudo-random tokens (pp) and then -n single-token
// decode steps (tg). Also measures the machine's memory read bandwidth and
// the generation ceiling it implies (weight bytes per token / bandwidth).
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "json.hpp"
#include "measure/bandwidth_probe.hpp"
#include "measure/device_bandwidth.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/session/llama_session.hpp"
#include "loom/runtime/types.hpp"
#include "options/placement_options.hpp"

namespace loom::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::string device;  // "": LOOM_DEVICES, else cpu
  int64_t n_prompt = 256;
  int64_t n_gen = 64;
  int64_t reps = 3;
  int64_t n_batch = 256;
  std::vector<int64_t> threads;  // empty: the device's default
  loom_type_t kv_type = llm::SessionOptions().kv_type;
  PlacementOptions placement;
  bool sparse = true;  // --sparse on|off (llm::LoadOptions::sparse)
};

struct Row {
  std::string device;
  int64_t threads = 0;  // 0: the device's default
  std::string test;     // "pp256", "tg64"
  int64_t n_tokens = 0;
  std::vector<double> samples;  // tokens/s per repetition
  // tg rows: read bandwidth (GB/s) probed right before and right after each
  // repetition, the larger of the two (the host's memory bandwidth swings
  // with its other tenants; a bound from one probe at another moment can be
  // off by half).
  std::vector<double> beside_gb_per_s;
  double mean = 0;
  double stddev = 0;
};

// The options (checked by the option table) into *o; "" or the error for a
// bad-arguments exit (2).
std::string parse_args(const ParsedOptions& p, BenchOptions* o) {
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  o->model = p.text("--model");
  o->device = p.text("--device");
  o->n_prompt = p.integer("--n-prompt", o->n_prompt);
  o->n_gen = p.integer("--n-gen", o->n_gen);
  o->reps = p.integer("--repetitions", o->reps);
  o->n_batch = p.integer("--batch", o->n_batch);
  o->threads = p.integers("--threads");
  if (p.has("--kv-type")) parse_kv_type(p.text("--kv-type"), &o->kv_type);
  o->sparse = p.text("--sparse", "on") == "on";
  o->placement = placement_of(p);
  if (o->n_prompt == 0 && o->n_gen == 0) return "-p and -n are both 0: nothing to measure";
  if (o->n_prompt + o->n_gen > kMaxInt) return "-p plus -n is too large";
  return "";
}

void finish(Row* r) {
  double sum = 0;
  for (double s : r->samples) sum += s;
  r->mean = r->samples.empty() ? 0 : sum / static_cast<double>(r->samples.size());
  double var = 0;
  for (double s : r->samples) var += (s - r->mean) * (s - r->mean);
  r->stddev = r->samples.size() > 1 ? std::sqrt(var / static_cast<double>(r->samples.size() - 1)) : 0;
}

std::string human_size(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  } else if (bytes >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f KiB", bytes / 1024.0);
  }
  return buf;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The type of the layer weights ("q4_0"), or of the embedding for a model
// without layers.
std::string weight_type(const llm::LlamaModel& m) {
  const Tensor* t = m.layers.empty() ? m.tok_embd
                  : m.layers[0].wq  ? m.layers[0].wq
                  : m.layers[0].wqkv ? m.layers[0].wqkv
                                     : m.tok_embd;
  return t ? type_name(t->type) : "?";
}

// Weight bytes read per generated token: everything but the embedding table
// (one row of it is read), plus the output head (the embedding when tied);
// of a mixture of experts' stacked expert tensors only the chosen experts'
// share (n_expert_used of n_expert).
uint64_t weight_bytes_per_token(const llm::LlamaModel& m) {
  uint64_t b = m.weights_bytes();
  const llm::LlamaHparams& h = m.hparams();
  if (h.n_expert > 0) {
    for (const llm::LlamaLayer& l : m.layers) {
      for (const Tensor* t : {l.ffn_gate_exps, l.ffn_up_exps, l.ffn_down_exps}) {
        if (t) b -= t->nbytes() - t->nbytes() / static_cast<uint64_t>(h.n_expert) * static_cast<uint64_t>(h.n_expert_used);
      }
    }
  }
  if (m.tok_embd) {
    const uint64_t table = m.tok_embd->nbytes();
    b -= table;
    b += table / static_cast<uint64_t>(std::max<int64_t>(1, m.tok_embd->ne[1]));
    if (m.output == m.tok_embd) b += table;
  }
  return b;
}

// K and V cache bytes one decode step reads, averaged over the tg run:
// every layer reads visible rows of K and of V (kv_dim elements of the
// cache's type), and the context grows from n_prompt + 1 to n_prompt + n_gen;
// a sliding-window layer sees at most its window's n_swa of them.
// Rounded to a whole byte.
uint64_t kv_bytes_per_token(const llm::LlamaModel& m, loom_type_t kv_type, int64_t n_prompt, int64_t n_gen) {
  const llm::LlamaHparams& h = m.hparams();
  double rows = 0.0;  // summed over the layers, averaged over the steps
  for (int64_t il = 0; il < h.n_layer; ++il) {
    double sum = 0.0;
    for (int64_t c = n_prompt + 1; c <= n_prompt + n_gen; ++c) sum += static_cast<double>(h.is_swa(il) ? std::min(c, h.n_swa) : c);
    rows += n_gen > 0 ? sum / static_cast<double>(n_gen) : static_cast<double>(n_prompt) + 0.5;
  }
  return static_cast<uint64_t>(std::llround(2.0 * rows * static_cast<double>(type_row_size(kv_type, h.kv_dim()))));
}

// Each tg repetition's tokens/s over the bound of the bandwidth probed
// beside it (Row::beside_gb_per_s).
std::vector<double> beside_ratios(const Row& r, double bytes_per_token) {
  std::vector<double> out;
  for (size_t i = 0; i < r.samples.size() && i < r.beside_gb_per_s.size(); ++i) {
    const double bound = r.beside_gb_per_s[i] * 1e9 / bytes_per_token;
    out.push_back(bound > 0 ? r.samples[i] / bound : 0.0);
  }
  return out;
}

}  // namespace

int cmd_bench(std::vector<std::string> args) {
  BenchOptions o;
  ModelCommand mc;
  const int rc = start_model_command(
      "loom bench", kBench, args, [&](const ParsedOptions& p) { return parse_args(p, &o); }, &o.model, &o.device,
      true, &mc);
  if (rc >= 0) return rc;
  const CommonOptions& common = mc.common;
  const std::vector<registry::Device*>& devices = mc.devices;
  std::string dev_names;
  for (registry::Device* d : devices) dev_names += (dev_names.empty() ? "" : ",") + d->name();

  llm::LoadOptions lo;
  lo.devices = devices;
  lo.progress = load_progress("loom bench");
  lo.sparse = o.sparse;
  llm::SessionOptions so;
  so.n_ctx = o.n_prompt + o.n_gen;
  so.n_batch = std::max<int64_t>(1, std::min(o.n_batch, std::max<int64_t>(1, o.n_prompt)));
  so.kv_type = o.kv_type;
  lo.n_gpu_layers = -1;  // layers where they fit (llm/placement/fit.hpp), sized for this run's context
  lo.check_fit = true;
  lo.fit_session = llm::fit_session(so);
  if (std::string e = apply_placement(o.placement, devices, &lo); !e.empty())
    return fail("loom bench", e);
  auto model = llm::LlamaModel::load(o.model, lo);
  if (!model.ok()) return fail("loom bench", model.status().message());
  const llm::LlamaModel& m = **model;
  const int64_t n_vocab = m.hparams().n_vocab;
  if (n_vocab <= 0) return fail("loom bench", o.model + ": the model has no vocabulary");

  const int64_t n_ctx_train = m.hparams().n_ctx_train;
  if (n_ctx_train > 0 && o.n_prompt + o.n_gen > n_ctx_train) {
    return fail("loom bench",
                "-p " + std::to_string(o.n_prompt) + " plus -n " + std::to_string(o.n_gen) + " = " +
                    std::to_string(o.n_prompt + o.n_gen) +
                    " tokens exceed the model's context of " + std::to_string(n_ctx_train));
  }
  auto session = llm::LlamaSession::create(model->get(), so);
  if (!session.ok()) return fail("loom bench", session.status().message());
  llm::LlamaSession& s = **session;
  if (s.n_ctx() < o.n_prompt + o.n_gen) {
    return fail("loom bench", "-p " + std::to_string(o.n_prompt) + " plus -n " +
                                  std::to_string(o.n_gen) + " tokens exceed the context of " +
                                  std::to_string(s.n_ctx()));
  }

  // Fixed pseudo-random token ids (the same on every run), never the text.
  uint64_t lcg = 0x9E3779B97F4A7C15ull;
  auto next_token = [&]() {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<llm::TokenId>((lcg >> 33) % static_cast<uint64_t>(n_vocab));
  };
  std::vector<llm::TokenId> prompt(static_cast<size_t>(o.n_prompt));
  for (auto& t : prompt) t = next_token();
  std::vector<llm::TokenId> gen(static_cast<size_t>(o.n_gen));
  for (auto& t : gen) t = next_token();

  std::vector<int64_t> thread_list = o.threads;
  if (thread_list.empty()) thread_list.push_back(0);
  // Memory-bandwidth ceiling of generation, measured with as many threads
  // as the largest --threads (else every hardware thread): beside every tg
  // repetition and once at the end.
  int bw_threads = static_cast<int>(*std::max_element(thread_list.begin(), thread_list.end()));
  if (bw_threads <= 0) bw_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Decode on one device with its own memory (every layer and the output
  // head there) is judged by that memory's bandwidth, copied through its
  // plugin; otherwise by the host's, read by the host probe.
  registry::Device* judged = m.output_device();
  for (int64_t il = 0; il < m.hparams().n_layer && judged != nullptr; ++il) {
    if (m.layer_device(il) != judged) judged = nullptr;
  }
  std::unique_ptr<DeviceBandwidthProbe> device_probe;
  std::string device_probe_note;
  if (judged != nullptr && has_own_memory(*judged)) {
    auto dp = DeviceBandwidthProbe::create(*judged);
    if (dp.ok()) {
      device_probe = std::move(*dp);
    } else {
      device_probe_note = "; " + judged->name() + "'s own bandwidth not measured (" + dp.status().message() +
                          "): the bound is the host's";
    }
  }
  std::unique_ptr<BandwidthProbe> host_probe;
  if (!device_probe) host_probe = std::make_unique<BandwidthProbe>();
  auto probe_measure = [&](int passes) -> Bandwidth {
    if (device_probe) {
      auto bw = device_probe->measure(passes);
      return bw.ok() ? *bw : Bandwidth{};
    }
    return host_probe->measure(bw_threads, passes);
  };
  const std::string probe_text =
      (device_probe ? device_probe->describe() : host_probe->describe(bw_threads)) + device_probe_note;
  std::vector<Row> rows;
  std::vector<float> logits;
  for (int64_t threads : thread_list) {
    if (threads > 0) {
      // Every CPU-like device of the list takes the thread count.
      for (registry::Device* d : devices) {
        if (d->info().type != LOOM_DEVICE_TYPE_CPU && d->info().type != LOOM_DEVICE_TYPE_ACCEL) continue;
        Status st = d->set_threads(static_cast<int>(threads));
        if (!st.ok() && devices.size() == 1)
          return fail("loom bench", "--threads " + std::to_string(threads) + ": " + st.message());
      }
    }
    // Warm-up (untimed): one batch of the prompt, then one decode step from
    // an empty cache (the context holds exactly what is measured).
    Status st;
    if (o.n_prompt > 0) {
      s.reset();
      st = s.eval({prompt.begin(), prompt.begin() + std::min<int64_t>(o.n_prompt, s.n_batch())}, false, &logits);
    }
    if (st.ok() && o.n_gen > 0) {
      s.reset();
      st = s.eval({gen.front()}, false, &logits);
    }
    if (!st.ok()) return fail("loom bench", st.message());

    Row pp{dev_names, threads, "pp" + std::to_string(o.n_prompt), o.n_prompt, {}, {}, 0, 0};
    Row tg{dev_names, threads, "tg" + std::to_string(o.n_gen), o.n_gen, {}, {}, 0, 0};
    for (int64_t r = 0; r < o.reps; ++r) {
      s.reset();
      if (o.n_prompt > 0) {
        const double t0 = now_s();
        st = s.eval(prompt, false, &logits);
        const double dt = now_s() - t0;
        if (!st.ok()) return fail("loom bench", st.message());
        pp.samples.push_back(dt > 0 ? static_cast<double>(o.n_prompt) / dt : 0);
      }
      if (o.n_gen > 0) {
        const double bw_before = probe_measure(2).gb_per_s;
        const double t0 = now_s();
        for (llm::TokenId t : gen) {
          st = s.eval({t}, false, &logits);
          if (!st.ok()) return fail("loom bench", st.message());
        }
        const double dt = now_s() - t0;
        tg.samples.push_back(dt > 0 ? static_cast<double>(o.n_gen) / dt : 0);
        tg.beside_gb_per_s.push_back(std::max(bw_before, probe_measure(2).gb_per_s));
      }
    }
    if (o.n_prompt > 0) {
      finish(&pp);
      rows.push_back(pp);
    }
    if (o.n_gen > 0) {
      finish(&tg);
      rows.push_back(tg);
    }
  }

  const Bandwidth bw = probe_measure(5);
  // The bound counts every byte a decode step must read: the weights and
  // the KV cache it attends over (which grows with the context).
  const uint64_t weight_bytes = weight_bytes_per_token(m);
  const uint64_t kv_bytes = kv_bytes_per_token(m, o.kv_type, o.n_prompt, o.n_gen);
  const double bytes_per_token = static_cast<double>(weight_bytes + kv_bytes);
  const double bound = bw.gb_per_s > 0 && bytes_per_token > 0 ? bw.gb_per_s * 1e9 / bytes_per_token : 0;
  const double weights_bound = bw.gb_per_s > 0 && weight_bytes > 0 ? bw.gb_per_s * 1e9 / weight_bytes : 0;

  const std::string model_name = base_name(o.model);
  const std::string size = human_size(static_cast<double>(m.weights_bytes()));
  const std::string type = weight_type(m);
  auto threads_text = [](int64_t t) { return t > 0 ? std::to_string(t) : std::string("default"); };
  if (common.json) {
    Json out;
    out["model"] = model_name;
    out["model_path"] = o.model;
    out["architecture"] = m.architecture();
    out["devices"] = Json::array();
    for (registry::Device* d : devices) out["devices"].push_back(d->name());
    out["size_bytes"] = m.weights_bytes();
    out["type"] = type;
    out["kv_type"] = type_name(o.kv_type);
    out["n_layer"] = m.hparams().n_layer;
    out["n_embd"] = m.hparams().n_embd;
    out["n_prompt"] = o.n_prompt;
    out["n_gen"] = o.n_gen;
    out["repetitions"] = o.reps;
    out["n_batch"] = s.n_batch();
    out["weights_zero_copy"] = m.zero_copy();
    out["results"] = Json::array();
    for (const Row& r : rows) {
      Json row;
      row["device"] = r.device;
      row["threads"] = r.threads > 0 ? Json(r.threads) : Json(nullptr);
      row["test"] = r.test;
      row["n_tokens"] = r.n_tokens;
      row["avg_ts"] = r.mean;
      row["stddev_ts"] = r.stddev;
      row["samples_ts"] = r.samples;
      if (r.test[0] == 't') {
        row["bound_ratio"] = bound > 0 ? r.mean / bound : 0.0;
        row["beside_gb_per_s"] = r.beside_gb_per_s;
        row["beside_bound_ratios"] = beside_ratios(r, bytes_per_token);
      }
      out["results"].push_back(std::move(row));
    }
    out["bandwidth"] = {{"read_gb_per_s", bw.gb_per_s}, {"buffer_bytes", bw.bytes}, {"threads", bw.threads},
                        {"passes", bw.passes}, {"probe", probe_text},
                        {"memory", device_probe ? judged->name() : std::string("host")}};
    if (host_probe) {
      out["bandwidth"]["cache_bytes"] = host_probe->cache().bytes;
      out["bandwidth"]["cache_level"] = host_probe->cache().level;
      out["bandwidth"]["cache_source"] = host_probe->cache().source;
    }
    out["gen_bound"] = {{"weight_bytes_per_token", weight_bytes},
                        {"kv_bytes_per_token", kv_bytes},
                        {"tokens_per_s", bound},
                        {"weights_only_tokens_per_s", weights_bound}};
    put_json(out);
    return 0;
  }

  std::printf("| model | size | type | device | threads | test | t/s |\n");
  std::printf("| --- | ---: | --- | --- | ---: | ---: | ---: |\n");
  for (const Row& r : rows) {
    std::printf("| %s | %s | %s | %s | %s | %s | %.2f ± %.2f |\n", model_name.c_str(), size.c_str(), type.c_str(),
                r.device.c_str(), threads_text(r.threads).c_str(), r.test.c_str(), r.mean, r.stddev);
  }
  std::fflush(stdout);
  std::fprintf(stderr,
               "\nloom bench: memory bandwidth %.2f GB/s (best of %d passes: %s); "
               "read per generated token: weights %s + KV cache %s (%s, mean over contexts %lld..%lld) -> "
               "generation bound %.2f tokens/s (weights alone: %.2f)\n",
               bw.gb_per_s, bw.passes, probe_text.c_str(), human_size(weight_bytes).c_str(), human_size(kv_bytes).c_str(), type_name(o.kv_type),
               static_cast<long long>(o.n_prompt + 1), static_cast<long long>(o.n_prompt + o.n_gen), bound,
               weights_bound);
  for (const Row& r : rows) {
    if (r.test[0] != 't' || bound <= 0) continue;
    std::vector<double> ratios = beside_ratios(r, bytes_per_token);
    std::string beside;
    if (!ratios.empty()) {
      std::sort(ratios.begin(), ratios.end());
      char buf[160];
      std::snprintf(buf, sizeof buf, "; against the bandwidth probed beside each repetition: %.1f%% (%.1f..%.1f%%)",
                    100.0 * ratios[ratios.size() / 2], 100.0 * ratios.front(), 100.0 * ratios.back());
      beside = buf;
    }
    std::fprintf(stderr, "loom bench: %s threads %s: %s %.2f tokens/s = %.1f%% of the bound%s\n", r.device.c_str(),
                 threads_text(r.threads).c_str(), r.test.c_str(), r.mean, 100.0 * r.mean / bound, beside.c_str());
  }
  return 0;
}

}  // namespace loom::cli
