// The `loom` command: entry point, --help, --version, subcommand dispatch.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.hpp"
#include "command_guard.hpp"
#include "loom/plugin.h"

namespace {

const char kHelp[] =
    "loom - run tensor graphs on whatever hardware this machine has\n"
    "\n"
    "usage: loom <command> [options]\n"
    "\n"
    "commands:\n"
    "  devices          list every plugin candidate with its fate (ready, unavailable,\n"
    "                   failed, skipped) and every device with type, memory,\n"
    "                   identity and capabilities\n"
    "  check            run a small graph (matmul, scale, softmax, rms_norm) on one\n"
    "                   device and compare with a host computation\n"
    "  run              generate text with a GGUF model (llama, qwen2, qwen3) over a\n"
    "                   device list: the text streams to stdout, speeds and the\n"
    "                   devices to stderr\n"
    "  plan             the scheduler's plan of one forward step of a model as\n"
    "                   Graphviz DOT or text: a box per split (device, layers,\n"
    "                   nodes, weights, compute memory) and the copies between\n"
    "                   them, or every node with --detail nodes\n"
    "  bench            prompt-processing and generation speed of a model (like\n"
    "                   llama-bench): a markdown table of tokens/s (mean +- stddev\n"
    "                   over repetitions) and the memory-bandwidth ceiling\n"
    "  tokenize         the token ids and pieces a GGUF file's tokenizer gives a\n"
    "                   text (reads only the tokenizer: vocabulary-only files work)\n"
    "  chat             talk with a model: each stdin line is a user turn in the\n"
    "                   model's chat format, the reply streams to stdout\n"
    "  conformance      the conformance suite (ABI checks, every op and type the\n"
    "                   device claims against a host reference) on a plugin file\n"
    "                   or a device: a table and a summary; exit 0 when all pass\n"
    "  profile          run a ReLU-FFN model densely over a text and write each\n"
    "                   layer's neuron firing shares (blk.N.ffn_freq) to a GGUF\n"
    "                   for --sparse-budget (-m MODEL -p TEXT|-f FILE [-o OUT]\n"
    "                   [--ctx N] [--batch N] [--device LIST]; default OUT:\n"
    "                   MODEL with .ffn_freq.gguf for .gguf)\n"
    "\n"
    "options (every command):\n"
    "  --json                 one JSON object on stdout instead of text\n"
    "  --plugin-path DIR      also search DIR for plugins, before LOOM_PLUGIN_PATH\n"
    "                         (repeatable)\n"
    "options (conformance):\n"
    "  --plugin FILE          test the devices of this plugin file only (nothing\n"
    "                         else is loaded; a file that does not load is an error)\n"
    "  --device NAME          test this device (with --plugin: of that file)\n"
    "  --ops LIST             only graphs of these ops, e.g. mul_mat,soft_max\n"
    "  --json                 one JSON object: rows, cases, failures, lost cases,\n"
    "                         summary\n"
    "  --case-timeout S       seconds one case may run (default 600); past it its\n"
    "                         child process is killed and the case fails with\n"
    "                         'no answer in S s'\n"
    "  --no-isolate           run every case in this process (for a debugger).\n"
    "                         Default: each case family (MatMulTest, Abi, ...) in\n"
    "                         its own child process: a case that crashes it (the\n"
    "                         signal is reported) or hangs fails alone, the\n"
    "                         family's later cases go on in a new child, and a\n"
    "                         device context lost to a sticky error costs only\n"
    "                         its own family\n"
    "options (check):\n"
    "  --device NAME          device to run on (default: the first device of\n"
    "                         LOOM_DEVICES, else of the auto policy, that runs\n"
    "                         every op of the check graph)\n"
    "options (run):\n"
    "  -m, --model FILE       GGUF model (architectures llama, qwen2, qwen3; weights\n"
    "                         f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl,\n"
    "                         q2_k..q6_k). Default: $LOOM_MODEL, else\n"
    "                         $LOOM_MODELS_DIR/stories260K.gguf, else\n"
    "                         ../shared/models/stories260K.gguf\n"
    "  -p, --prompt TEXT      text to continue (default: empty, start from BOS;\n"
    "                         '-': read it from stdin)\n"
    "  -f, --file FILE        read the prompt from FILE, byte for byte\n"
    "  -n, --n-predict N      tokens to generate at most (default 200; stops at EOS)\n"
    "  --temp T               sampling temperature (default 0: greedy)\n"
    "  --top-k K              keep the K most likely tokens (default 40; 0: all)\n"
    "  --top-p P              keep the most likely tokens up to probability P\n"
    "                         (default 0.95; 1: all)\n"
    "  -s, --seed S           random seed for sampling (default 42)\n"
    "  -b, --batch N          prompt tokens per forward pass (default 32)\n"
    "  -c, --ctx N            context length (default: the model's)\n"
    "  --device LIST          devices, most preferred first, or a policy (default:\n"
    "                         $LOOM_DEVICES, else auto; e.g. blas,cpu or\n"
    "                         vulkan0,cpu): the scheduler splits each step's graph\n"
    "                         between them. Policies: auto (accelerators that are\n"
    "                         not emulated, then the CPU), gpu-first (the same\n"
    "                         order), cpu-only (the CPU alone)\n"
    "  -ngl, --n-gpu-layers N weights and KV cache of the first N layers on the\n"
    "                         first non-CPU device of the list when it has its own\n"
    "                         memory (ignored for devices reading host memory,\n"
    "                         like blas). Default: fit -- each such device takes\n"
    "                         as many layers as fit in its free memory after its\n"
    "                         KV cache and compute buffers, the CPU the rest. A\n"
    "                         request (-ngl, -ts) that does not fit is an error\n"
    "                         giving bytes needed and free per device\n"
    "  -v, --verbose          print the fit report (per device: free memory,\n"
    "                         weights, KV, compute, layers) and the compute\n"
    "                         buffers reserved, on stderr\n"
    "  --fit                  print the fit report on stdout and exit: no weight\n"
    "                         is loaded, nothing generated\n"
    "  -sm, --split-mode none|layer\n"
    "                         layer: share the layers out over the --device list\n"
    "                         (equal shares unless --tensor-split), each layer's\n"
    "                         weights and KV cache on its device, the output head\n"
    "                         with the last layer (default none: -ngl decides)\n"
    "  -ts, --tensor-split A,B,...\n"
    "                         one proportion per --device entry, in order, e.g.\n"
    "                         3,1 (implies --split-mode layer)\n"
    "  -ot, --override-tensor REGEX=DEVICE\n"
    "                         weights whose whole name matches REGEX live on DEVICE\n"
    "                         (repeatable, first match wins; e.g.\n"
    "                         'blk\\..*\\.ffn_.*=cpu')\n"
    "  -t, --threads N        threads of the CPU-like devices\n"
    "  --kv-type f16|f32      KV cache element type (default f16)\n"
    "  --sparse on|off        ReLU models with FFN predictors: compute only the\n"
    "                         predicted neurons (default on; off: every layer dense)\n"
    "  --sparse-budget BYTES  hot/cold placement: the most frequently active neurons'\n"
    "                         FFN rows, up to BYTES, on the second --device, the rest\n"
    "                         on the cpu; both shares run and are added (the\n"
    "                         layers stay on the cpu unless -ngl or -ts move them)\n"
    "  --sparse-profile FILE  rank neurons for --sparse-budget by FILE's\n"
    "                         blk.N.ffn_freq (from 'loom profile') instead of the model's\n"
    "  --json                 print one JSON object at the end instead of streaming:\n"
    "                         prompt/generated token ids, text, tokens/s, devices\n"
    "options (plan):\n"
    "  -m, --model FILE       GGUF model (default as for run; without one, a\n"
    "                         synthetic graph of two matmuls)\n"
    "  --batch N              tokens in the planned step (default 1: a decode step)\n"
    "  --device LIST          devices as for run (default: $LOOM_DEVICES, else auto)\n"
    "  -ngl, --n-gpu-layers N as for run (default: fit); the fit report goes to\n"
    "                         stderr\n"
    "  -sm, -ts, -ot          as for run\n"
    "  --detail splits|nodes  splits (default): one box per split with its device,\n"
    "                         layers or node range, node count, weights read and\n"
    "                         the device's compute memory, and the copies between\n"
    "                         splits as edges labelled with tensors and bytes;\n"
    "                         nodes: every node (views included) with op, type\n"
    "                         and shape in the cluster of its split and device,\n"
    "                         weights in the cluster of the device holding them\n"
    "  --format dot|text      Graphviz DOT (default; render with dot -Tsvg) or\n"
    "                         text (nodes: each node and why it runs where it\n"
    "                         does, as LOOM_SCHED_DEBUG=1 prints)\n"
    "  --fit                  print the fit report on stdout and exit (no plan)\n"
    "  -o, --output FILE      write the plan there instead of stdout\n"
    "options (bench):\n"
    "  -m, --model FILE       GGUF model (default as for run)\n"
    "  -p, --n-prompt N       prompt tokens, fixed pseudo-random ids (default 256)\n"
    "  -n, --n-gen N          single-token decode steps after the prompt (default 64)\n"
    "  -r, --repetitions R    repetitions, each from an empty KV cache (default 3)\n"
    "  --batch N              prompt tokens per forward pass (default 256, at most -p)\n"
    "  --device LIST          devices as for run, e.g. cpu or blas,cpu (default:\n"
    "                         $LOOM_DEVICES, else auto; layers placed by the fit\n"
    "                         as for run)\n"
    "  -sm, -ts, -ot          as for run\n"
    "  --threads N[,N...]     threads of the device; a list gives one row per count\n"
    "  --kv-type f16|f32      KV cache element type (default f16); the bound counts\n"
    "                         its bytes\n"
    "  --sparse on|off        as for run\n"
    "  --json                 one JSON object: per-test samples, mean, stddev,\n"
    "                         measured read bandwidth and the generation bound\n"
    "options (tokenize):\n"
    "  -m, --model FILE       GGUF file with a tokenizer (default as for run)\n"
    "  -p, --prompt TEXT      the text to tokenize\n"
    "  -f, --file FILE        read the text from FILE, byte for byte ('-': stdin)\n"
    "  --ids                  print only the ids, space-separated on one line\n"
    "  --no-parse-special     special-token text like <|eot_id|> is plain text\n"
    "                         (default: written special tokens become their ids)\n"
    "  --json                 one JSON object: ids, tokens (id, piece), tokenizer,\n"
    "                         pre-tokenizer, add_bos, add_eos, add_sep\n"
    "  BOS is prepended only when the file's tokenizer asks for it:\n"
    "  tokenizer.ggml.add_bos_token, or without that key, yes for SentencePiece\n"
    "  and llama-3-style BPE (pre llama-bpe, llama3, tekken, ...) and no for other\n"
    "  BPE, yes ([CLS]) for WordPiece; EOS only with add_eos_token; WordPiece\n"
    "  ends with [SEP] (add_sep_token, default yes). Each output line is an id\n"
    "  and its 'piece' (\\n, \\t, \\\\, and \\xNN for control bytes and partial UTF-8).\n"
    "options (chat):\n"
    "  -m, --model FILE       GGUF model with a tokenizer (default as for run)\n"
    "  --device LIST          as for run (default: LOOM_DEVICES, else auto; layers\n"
    "                         placed by the fit as for run)\n"
    "  -sm, -ts, -ot          as for run\n"
    "  -sys, --system TEXT    the system message of the conversation\n"
    "  --chat-format NAME     plain, chatml, llama3, llama2, mistral, phi3, gemma or\n"
    "                         zephyr (default: recognised from the file's\n"
    "                         tokenizer.chat_template; none or unknown: plain, warned)\n"
    "  -n, --n-predict N      at most N tokens per reply (default 512)\n"
    "  -c, --ctx N            context tokens for the whole conversation (default:\n"
    "                         the model's)\n"
    "  -t, --threads N        threads of the CPU-like devices\n"
    "  --temp T, --top-k K, --top-p P, -s/--seed S   sampling (default greedy)\n"
    "  A line /exit (or the end of input) ends the chat.\n"
    "\n"
    "  -h, --help             this help\n"
    "  --version              loom and plugin ABI versions\n"
    "\n"
    "environment:\n"
    "  LOOM_PLUGIN_PATH       colon-separated folders searched for libloom-*.so\n"
    "  LOOM_PLUGINS_SELECT    comma-separated globs: load only matching plugins\n"
    "  LOOM_PLUGINS_DISABLE   comma-separated globs: never load matching plugins\n"
    "  LOOM_DEVICES           device list or policy (cpu, cuda0,cpu, auto,\n"
    "                         gpu-first, cpu-only) of run, plan, bench, chat and\n"
    "                         check when --device is not given (unset: auto)\n"
    "  LOOM_CPU_THREADS       threads of the cpu device (default: physical cores)\n"
    "  LOOM_BLAS_THREADS      threads of the blas device (default: physical cores)\n"
    "  LOOM_CPU_VARIANT       force a cpu plugin build: baseline, avx2, avx512\n"
    "                         (LOOM_<PLUGIN>_VARIANT for any plugin's variants)\n"
    "  LOOM_CPU_REPACK        0: keep Q8_0/Q4_0 weights in GGUF layout (no repacking)\n"
    "  LOOM_CPU_PROFILE       1: time every cpu node per op; report at log level info\n"
    "                         (LOOM_LOG=cpu:info)\n"
    "  LOOM_LLM_FUSED_ATTN    0: build attention unfused (MUL_MAT, SOFT_MAX, MUL_MAT)\n"
    "  LOOM_CHECK_FINITE      1: after each step, name the first graph node whose\n"
    "                         result holds a NaN or infinity (slow; a debug aid)\n"
    "  LOOM_NULL_DEVICES      number of devices the null (skeleton) plugin exposes\n"
    "  LOOM_LOG               log filter, e.g. registry:debug,*:warn\n"
    "  LOOM_MODEL             default model file of 'run'\n"
    "  LOOM_MODELS_DIR        folder searched for stories260K.gguf by 'run'\n"
    "  LOOM_VULKAN_DEVICES    comma-separated Vulkan device indices to expose\n"
    "  LOOM_VULKAN_LOADER     Vulkan loader file (default libvulkan.so.1)\n"
    "  LOOM_SCHED_DEBUG       1: print every split and why each node went where\n"
    "  LOOM_SCHED_CHECK       1: poison memory a split no longer owns (debug)\n"
    "  LOOM_SCHED_PIPELINING  input copies in flight per async device (default 1)\n"
    "  LOOM_CPU_REFERENCE     1: the cpu device runs MUL_MAT on its reference loop\n"
    "\n"
    "exit status: 0 success, 1 the command failed, 2 bad arguments\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  const std::string cmd = args.front();
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("loom %s (plugin ABI %u.%u)\n", LOOM_VERSION_STRING, LOOM_ABI_VERSION_MAJOR,
                LOOM_ABI_VERSION_MINOR);
    return 0;
  }
  args.erase(args.begin());
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    }
  }
  using Command = int (*)(std::vector<std::string>);
  Command fn = cmd == "devices"    ? loom::cli::cmd_devices
               : cmd == "check"    ? loom::cli::cmd_check
               : cmd == "run"      ? loom::cli::cmd_run
               : cmd == "plan"     ? loom::cli::cmd_plan
               : cmd == "bench"    ? loom::cli::cmd_bench
               : cmd == "tokenize" ? loom::cli::cmd_tokenize
               : cmd == "chat"     ? loom::cli::cmd_chat
               : cmd == "conformance" ? loom::cli::cmd_conformance
               : cmd == "profile"  ? loom::cli::cmd_profile
                                   : nullptr;
  if (fn == nullptr) {
    std::fprintf(stderr, "loom: unknown command '%s' (try 'loom --help')\n", cmd.c_str());
    return 2;
  }
  return loom::cli::run_guarded(cmd, [&] { return fn(std::move(args)); });
}
