// A server's decode step without the server (issue 31): S sequences of one
// session decoding together (LlamaSession::eval_seqs, every row asking for
// logits, as `loom serve` steps them), against the same model's prompt
// processing in the same run (a one-slot session reading --pp tokens in
// batches of --pp, as `loom bench` does). Prints the median step time, the
// aggregate decode rate and its ratio to the prompt rate: issue 31's
// "16 clients / pp" without the HTTP threads, the clients and the sampling.
// With LOOM_CPU_PROFILE=1 (and LOOM_LOG=cpu:info) the cpu plugin's per-op
// table covers both parts.
//
//   build/release/bin/loom_seq_step_bench -m MODEL [--device cpu] [--seqs 16]
//       [--prompt 16] [--gen 128] [--pp 256] [--reps 3]
//       [--ctx N]  (positions per slot, as `loom serve -c N`; default --prompt + --gen)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/llama_session.hpp"
#include "loom/registry/registry.hpp"

namespace {

using namespace loom;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string model, device = "cpu";
  int seqs = 16, prompt = 16, gen = 128, pp = 256, reps = 3;
  int ctx = 0;  // positions per slot; 0: --prompt + --gen
};

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (k == "-m" || k == "--model") {
      a->model = v;
      continue;
    }
    if (k == "--device") {
      a->device = v;
      continue;
    }
    const int n = std::atoi(v.c_str());
    if (n < 1) return false;
    if (k == "--seqs") a->seqs = n;
    else if (k == "--prompt") a->prompt = n;
    else if (k == "--gen") a->gen = n;
    else if (k == "--pp") a->pp = n;
    else if (k == "--reps") a->reps = n;
    else if (k == "--ctx") a->ctx = n;
    else return false;
  }
  return !a->model.empty();
}

int die(const Status& st) {
  std::fprintf(stderr, "loom_seq_step_bench: %s\n", st.to_string().c_str());
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Fixed pseudo-random token ids in [1, n_vocab).
std::vector<llm::TokenId> tokens_of(int n, int64_t n_vocab, uint32_t seed) {
  std::vector<llm::TokenId> t(static_cast<size_t>(n));
  for (auto& x : t) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<llm::TokenId>(1 + (seed >> 8) % static_cast<uint32_t>(n_vocab - 1));
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: loom_seq_step_bench -m MODEL [--device cpu] [--seqs 16] [--prompt 16] [--gen 128] [--ctx N] "
                 "[--pp 256] [--reps 3]\n");
    return 2;
  }
  registry::Options ro;
  ro.paths = {LOOM_BENCH_PLUGIN_DIR};
  ro.use_env = false;
  auto reg = registry::Registry::load(ro);
  registry::Device* dev = reg->device(a.device);
  if (dev == nullptr) {
    std::fprintf(stderr, "loom_seq_step_bench: no device '%s'\n", a.device.c_str());
    return 1;
  }
  auto m = llm::LlamaModel::load(a.model, dev);
  if (!m.ok()) return die(m.status());
  const int64_t n_vocab = (*m)->hparams().n_vocab;

  // A model has one live session at a time (LlamaSession::create): the
  // prompt runs first, in a one-slot session (--pp tokens in one batch, each
  // repetition from an empty cache, after a warm-up), then the decode steps
  // in a session of --seqs slots of --prompt + --gen positions.
  std::vector<float> logits;
  std::vector<double> pp_rate, step_ms, seq_rate;
  {
    llm::SessionOptions po;
    po.n_ctx = a.pp;
    po.n_batch = a.pp;
    auto ps = llm::LlamaSession::create(m->get(), po);
    if (!ps.ok()) return die(ps.status());
    const std::vector<llm::TokenId> pp_tokens = tokens_of(a.pp, n_vocab, 7);
    for (int rep = 0; rep <= a.reps; ++rep) {
      (*ps)->reset();
      const auto t0 = Clock::now();
      if (Status st = (*ps)->eval(pp_tokens, false, &logits); !st.ok()) return die(st);
      const double pp_s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (rep > 0) pp_rate.push_back(a.pp / pp_s);
    }
  }
  llm::SessionOptions so;
  so.n_ctx = std::max(a.ctx, a.prompt + a.gen);
  so.n_seq = a.seqs;
  so.n_batch = std::max(a.seqs, a.prompt);
  auto ss = llm::LlamaSession::create(m->get(), so);
  if (!ss.ok()) return die(ss.status());
  for (int rep = 0; rep <= a.reps; ++rep) {  // rep 0 warms up
    // Each slot's prompt, then --gen steps of one token per slot.
    for (int s = 0; s < a.seqs; ++s) {
      const std::vector<llm::TokenId> p = tokens_of(a.prompt, n_vocab, 100u + static_cast<uint32_t>(s));
      std::vector<llm::SeqToken> batch;
      for (int i = 0; i < a.prompt; ++i) batch.push_back({p[static_cast<size_t>(i)], s, i, i + 1 == a.prompt});
      if (Status st = (*ss)->eval_seqs(batch, &logits); !st.ok()) return die(st);
    }
    std::vector<double> steps;
    const auto d0 = Clock::now();
    for (int g = 0; g < a.gen; ++g) {
      std::vector<llm::SeqToken> batch;
      for (int s = 0; s < a.seqs; ++s) {
        // Any fixed id reads the same weights as a sampled one would.
        const auto tok = static_cast<llm::TokenId>(1 + (g * 31 + s * 7) % (n_vocab - 1));
        batch.push_back({tok, s, a.prompt + g, true});
      }
      const auto t = Clock::now();
      if (Status st = (*ss)->eval_seqs(batch, &logits); !st.ok()) return die(st);
      steps.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    }
    const double dec_s = std::chrono::duration<double>(Clock::now() - d0).count();
    if (rep == 0) continue;
    step_ms.push_back(median(steps));
    seq_rate.push_back(static_cast<double>(a.seqs) * a.gen / dec_s);
    std::printf("rep %d: pp%d %.1f t/s; %d sequences x %d steps (contexts %d..%d): step median %.3f ms, %.1f t/s\n",
                rep, a.pp, pp_rate[static_cast<size_t>(rep - 1)], a.seqs, a.gen, a.prompt + 1, a.prompt + a.gen,
                step_ms.back(), seq_rate.back());
  }
  const double pp = median(pp_rate), seq = median(seq_rate);
  std::printf("\n| model | pp%d t/s | %d-sequence step ms | %d sequences t/s | sequences / pp |\n", a.pp, a.seqs,
              a.seqs);
  std::printf("|---|---:|---:|---:|---:|\n");
  const std::string name = a.model.substr(a.model.find_last_of('/') + 1);
  std::printf("| %s | %.1f | %.3f | %.1f | %.0f%% |\n", name.c_str(), pp, median(step_ms), seq, 100.0 * seq / pp);
  return 0;
}
