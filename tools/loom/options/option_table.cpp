#include "options/option_table.hpp"

namespace loom::cli {
namespace {

constexpr double kMaxInt = 2147483647.0;  // counts of tokens and layers: int32
constexpr uint32_t kPlace = kRun | kPlan | kBench | kChat | kServe;  // commands that load a model and place its layers
constexpr uint32_t kSample = kRun | kChat;
using K = ValueKind;

const char kDevicesExpect[] = "a device list or policy (see 'loom devices')";

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = {
      // Every command.
      {"--json", nullptr, nullptr, K::kSwitch, kDevices | kCheck | kProfile,
       "one JSON object on stdout instead of text"},
      {"--plugin-path", nullptr, "DIR", K::kName, kEveryCommand,
       "also search DIR for plugins, before LOOM_PLUGIN_PATH (repeatable)", 0, 0, "a folder", true},
      // The model and the text.
      {"--model", "-m", "FILE", K::kText, kRun | kBench | kProfile,
       "GGUF model (architectures {archs}; weights f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, "
       "q2_k..q6_k, iq4_xs). Default: $LOOM_MODEL, else $LOOM_MODELS_DIR/stories260K.gguf, else "
       "../shared/models/stories260K.gguf"},
      {"--model", "-m", "FILE", K::kText, kChat, "GGUF model with a tokenizer (default as for run)"},
      {"--model", "-m", "FILE", K::kText, kPlan,
       "GGUF model (default as for run; without one, a synthetic graph of two matmuls)"},
      {"--model", "-m", "FILE", K::kText, kTokenize, "GGUF file with a tokenizer (default as for run)"},
      {"--model", "-m", "FILE", K::kText, kServe,
       "GGUF model with a tokenizer to serve (default as for run); /v1/models names it by the file's base name"},
      {"--prompt", "-p", "TEXT", K::kText, kRun,
       "the text to continue (default empty: start from BOS; '-': read it from stdin)"},
      {"--prompt", "-p", "TEXT", K::kText, kProfile, "the text to profile on"},
      {"--prompt", "-p", "TEXT", K::kText, kTokenize, "the text to tokenize"},
      {"--file", "-f", "FILE", K::kName, kRun | kProfile | kTokenize,
       "read the text from FILE, byte for byte ('-': stdin)", 0, 0, "a file ('-': stdin)"},
      // Devices and placement.
      {"--device", nullptr, "LIST", K::kName, kPlace,
       "devices, most preferred first, or a policy (default: $LOOM_DEVICES, else auto; e.g. blas,cpu or "
       "vulkan0,cpu): the scheduler splits each step's graph between them and the layers are placed by the fit. "
       "Policies: auto (accelerators that are not emulated, then the CPU), gpu-first (the same order), "
       "cpu-only (the CPU alone)",
       0, 0, kDevicesExpect},
      {"--device", nullptr, "LIST", K::kName, kProfile,
       "devices, most preferred first, or a policy, as for run (default: $LOOM_DEVICES, else auto): the "
       "scheduler splits each step's graph between them; the weights stay in host memory",
       0, 0, kDevicesExpect},
      {"--device", nullptr, "NAME", K::kName, kCheck,
       "device to run on (default: the first device of LOOM_DEVICES, else of the auto policy, that runs every "
       "op of the check graph)",
       0, 0, kDevicesExpect},
      {"--device", nullptr, "NAME", K::kName, kConformance, "test this device (with --plugin: of that file)", 0, 0,
       kDevicesExpect},
      {"--n-gpu-layers", "-ngl", "N", K::kInt, kRun | kPlan,
       "weights and KV cache of the first N layers on the first non-CPU device of the list when it has its own "
       "memory (ignored for devices reading host memory, like blas). Default: fit -- each such device takes as "
       "many layers as fit in its free memory after its KV cache and compute buffers, the CPU the rest. A "
       "request (-ngl, -ts) that does not fit is an error giving bytes needed and free per device",
       0, kMaxInt, "an integer >= 0"},
      {"--split-mode", "-sm", "none|layer", K::kChoice, kPlace,
       "layer: share the layers out over the --device list (equal shares unless --tensor-split), each layer's "
       "weights and KV cache on its device, the output head with the last layer (default none: -ngl where "
       "given, else the fit, decides)"},
      {"--tensor-split", "-ts", "A,B,...", K::kSplit, kPlace,
       "one proportion per --device entry, in order, e.g. 3,1 (implies --split-mode layer)"},
      {"--override-tensor", "-ot", "REGEX=DEVICE", K::kOverride, kPlace,
       "weights whose name contains a match of REGEX live on DEVICE, as llama.cpp's -ot (repeatable, first "
       "match wins; ^...$ for the whole name; e.g. 'ffn_.*_exps=cpu' keeps a mixture's experts on the CPU)",
       0, 0, nullptr, true},
      {"--threads", "-t", "N", K::kInt, kRun | kChat | kServe, "threads of the CPU-like devices", 1, 1024,
       "an integer in [1, 1024]"},
      {"--threads", "-t", "N[,N...]", K::kIntList, kBench,
       "threads of the CPU-like devices; a list gives one row per count", 1, 1024,
       "an integer in [1, 1024] or a list like 1,2,4"},
      // The session.
      {"--ctx", "-c", "N", K::kInt, kRun, "context length in tokens (default: the model's, halved while its KV cache would take more than half "
       "of the free memory, down to 4096)", 1, kMaxInt,
       "an integer >= 1"},
      {"--ctx", "-c", "N", K::kInt, kChat, "context tokens for the whole conversation (default: the model's, halved while its KV cache would "
       "take more than half of the free memory, down to 4096)", 1,
       kMaxInt, "an integer >= 1"},
      {"--ctx", "-c", "N", K::kInt, kProfile,
       "the window in tokens each part of the text runs in, from an empty cache (default: min(the model's "
       "context, 512))",
       1, kMaxInt, "an integer >= 1"},
      {"--batch", "-b", "N", K::kInt, kRun | kProfile, "prompt tokens per forward pass (default 32)", 1, kMaxInt,
       "an integer >= 1"},
      {"--batch", "-b", "N", K::kInt, kServe,
       "tokens per engine step at most: one per decoding sequence plus a chunk of a prompt (default 256)", 1,
       kMaxInt, "an integer >= 1"},
      {"--batch", "-b", "N", K::kInt, kBench, "prompt tokens per forward pass (default 256, at most -p)", 1,
       kMaxInt, "an integer >= 1"},
      {"--batch", "-b", "N", K::kInt, kPlan, "tokens in the planned step (default 1: a decode step)", 1, kMaxInt,
       "an integer >= 1"},
      {"--kv-type", nullptr, "f16|f32|q8_0", K::kChoice, kRun | kChat | kServe,
       "KV cache element type (default f16; q8_0: about half the bytes, heads a multiple of 32 wide)"},
      {"--kv-type", nullptr, "f16|f32|q8_0", K::kChoice, kBench,
       "KV cache element type (default f16; q8_0: about half the bytes); the bound counts its bytes"},
      {"--sparse", nullptr, "on|off", K::kChoice, kRun | kBench,
       "ReLU models with FFN predictors: compute only the predicted neurons (default on; off: every layer "
       "dense)"},
      {"--sparse-budget", nullptr, "BYTES", K::kInt, kRun,
       "hot/cold placement: the most frequently active neurons' FFN rows, up to BYTES, on the second --device, "
       "the rest on the cpu; both shares run and are added (the layers stay on the cpu unless -ngl or -ts move "
       "them)",
       0, 9e18, "a byte count >= 0"},
      {"--sparse-profile", nullptr, "FILE", K::kName, kRun,
       "rank neurons for --sparse-budget by FILE's blk.N.ffn_freq (from 'loom profile') instead of the model's",
       0, 0, "a file (from 'loom profile')"},
      // Generation.
      {"--n-predict", "-n", "N", K::kInt, kRun, "tokens to generate at most (default 200); stops at EOS", 0,
       kMaxInt, "an integer >= 0"},
      {"--n-predict", "-n", "N", K::kInt, kChat,
       "tokens per reply at most (default 512); a reply stops at the model's end-of-turn token", 1, kMaxInt,
       "an integer >= 1"},
      {"--temp", nullptr, "T", K::kNumber, kSample, "sampling temperature (default 0: greedy)", 0, 1e6,
       "a number >= 0 (0: greedy)"},
      {"--top-k", nullptr, "K", K::kInt, kSample, "keep the K most likely tokens (default 40; 0: all)", 0, kMaxInt,
       "an integer >= 0 (0: all tokens)"},
      {"--top-p", nullptr, "P", K::kNumber, kSample,
       "keep the most likely tokens up to probability P (default 0.95; 1: all)", 0, 1, "a number in (0, 1]", false,
       false, true},
      {"--seed", "-s", "S", K::kInt, kSample, "random seed for sampling (default 42)", 0, 4294967295.0,
       "an integer in [0, 2^32)"},
      // run
      {"--verbose", "-v", nullptr, K::kSwitch, kRun,
       "print the fit report (per device: free memory, weights, KV, compute, layers) and the compute buffers "
       "reserved, on stderr; at the end each device's details as 'loom devices -v' prints them"},
      {"--verbose", "-v", nullptr, K::kSwitch, kDevices,
       "also each device's own details (loom.details): the Vulkan devices' pipeline cache file, whether it was "
       "found at start, pipelines built so far and their time"},
      {"--fit", nullptr, nullptr, K::kSwitch, kRun,
       "print the fit report on stdout and exit: no weight is loaded, nothing generated"},
      {"--fit", nullptr, nullptr, K::kSwitch, kPlan,
       "print the fit report on stdout and exit: no weight is loaded, nothing planned (without --fit the report "
       "goes to stderr)"},
      {"--json", nullptr, nullptr, K::kSwitch, kRun,
       "print one JSON object at the end instead of streaming: prompt/generated token ids, text, tokens/s, "
       "devices"},
      // plan
      {"--detail", nullptr, "splits|nodes", K::kChoice, kPlan,
       "splits (default): one box per split with its device, layers or node range, node count, weights read and "
       "the device's compute memory, and the copies between splits as edges labelled with tensors and bytes; "
       "nodes: every node (views included) with op, type and shape in the cluster of its split and device, "
       "weights in the cluster of the device holding them"},
      {"--format", nullptr, "dot|text", K::kChoice, kPlan,
       "Graphviz DOT (default; render with dot -Tsvg) or text (nodes: each node and why it runs where it does, "
       "as LOOM_SCHED_DEBUG=1 prints)"},
      {"--output", "-o", "FILE", K::kName, kPlan, "write the plan to FILE (default: stdout)", 0, 0, "a file name"},
      {"--output", "-o", "FILE", K::kName, kProfile,
       "write the profile to FILE (default: MODEL with .ffn_freq.gguf for .gguf)", 0, 0, "a file name"},
      // bench
      {"--n-prompt", "-p", "N", K::kInt, kBench, "prompt tokens, fixed pseudo-random ids (default 256)", 0, kMaxInt,
       "an integer >= 0"},
      {"--n-gen", "-n", "N", K::kInt, kBench, "single-token decode steps after the prompt (default 64)", 0, kMaxInt,
       "an integer >= 0"},
      {"--repetitions", "-r", "R", K::kInt, kBench, "repetitions, each from an empty KV cache (default 3)", 1, 1000,
       "an integer in [1, 1000]"},
      {"--json", nullptr, nullptr, K::kSwitch, kBench,
       "one JSON object: per-test samples, mean, stddev, measured read bandwidth and the generation bound"},
      // tokenize
      {"--ids", nullptr, nullptr, K::kSwitch, kTokenize, "print only the ids, space-separated on one line"},
      {"--no-parse-special", nullptr, nullptr, K::kSwitch, kTokenize,
       "special-token text like <|eot_id|> is plain text (default: written special tokens become their ids)"},
      {"--json", nullptr, nullptr, K::kSwitch, kTokenize,
       "one JSON object: ids, tokens (id, piece), tokenizer, pre-tokenizer, add_bos, add_eos, add_sep"},
      // chat
      {"--system", "-sys", "TEXT", K::kText, kChat, "the system message of the conversation"},
      {"--chat-format", nullptr, "NAME", K::kName, kChat,
       "plain, {chat_formats} (default: recognised from the file's tokenizer.chat_template; none or unknown: "
       "plain, warned)",
       0, 0, "a chat format name"},
      // serve
      {"--ctx", "-c", "N", K::kInt, kServe,
       "context tokens of each sequence slot: a prompt and its completion (default: the model's, at most 4096)", 1,
       kMaxInt, "an integer >= 1"},
      {"--host", nullptr, "HOST", K::kName, kServe,
       "address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 serves every interface)", 0, 0,
       "an address"},
      {"--port", nullptr, "N", K::kInt, kServe,
       "TCP port (default 8080; 0: a free one). The line 'loom serve: listening on http://HOST:PORT' on stdout "
       "says which",
       0, 65535, "an integer in [0, 65535]"},
      {"--parallel", "-np", "N", K::kInt, kServe,
       "sequences generated at once, each in its own slot of the KV cache (default 4)", 1, 1024,
       "an integer in [1, 1024]"},
      {"--api-key", nullptr, "KEY", K::kName, kServe,
       "require 'Authorization: Bearer KEY' on every route but /health (default: $LOOM_API_KEY; neither: no key)",
       0, 0, "a key"},
      {"--max-queue", nullptr, "N", K::kInt, kServe,
       "requests waiting for a free slot at most; more are answered 503 (default 64)", 0, 1000000,
       "an integer in [0, 1000000]"},
      {"--mixed-step-ratio", nullptr, "R", K::kNumber, kServe,
       "a step that reads prompt tokens beside running decodes may take at most R times the same step without "
       "them (default 2; higher: waiting prompts start sooner, running streams slow more while they arrive)",
       1, 1000, "a number in [1, 1000]"},
      {"--timeout", nullptr, "S", K::kInt, kServe,
       "seconds a connection may wait to read a request or to write a response (default 600)", 1, 86400,
       "an integer in [1, 86400]"},
      // conformance
      {"--plugin", nullptr, "FILE", K::kName, kConformance,
       "test the devices of this plugin file only (nothing else is loaded; a file that does not load is an "
       "error)",
       0, 0, "a plugin file"},
      {"--ops", nullptr, "LIST", K::kName, kConformance, "only graphs of these ops, e.g. mul_mat,soft_max", 0, 0,
       "a comma-separated op list"},
      {"--json", nullptr, nullptr, K::kSwitch, kConformance,
       "one JSON object: rows, cases, failures, lost cases, summary"},
      {"--case-timeout", nullptr, "S", K::kNumber, kConformance,
       "seconds one case may run (default 600); past it its child process is killed and the case fails with 'no "
       "answer in S s'",
       0.001, 1e6, "a number of seconds in [0.001, 1e6]"},
      {"--no-isolate", nullptr, nullptr, K::kSwitch, kConformance,
       "run every case in this process (for a debugger). Default: each case family (MatMulTest, Abi, ...) in its "
       "own child process: a case that crashes it (the signal is reported) or hangs fails alone, the family's "
       "later cases go on in a new child, and a device context lost to a sticky error costs only its own family"},
      // The conformance child (conformance_child.cpp): given by the parent only.
      {"--child-fd", nullptr, "FD", K::kInt, kConformance, "", 0, 1 << 30, "a number", false, true},
      {"--child-family", nullptr, "NAME", K::kName, kConformance, "", 0, 0, "a case family", false, true},
      {"--child-from", nullptr, "N", K::kInt, kConformance, "", 0, 1 << 30, "a number", false, true},
  };
  return table;
}

const std::vector<CommandSpec>& command_table() {
  static const std::vector<CommandSpec> table = {
      {"devices", kDevices,
       "list every plugin candidate with its fate (ready, unavailable, failed, skipped) and every device with "
       "type, memory, identity and capabilities",
       nullptr},
      {"check", kCheck,
       "run a small graph (matmul, scale, softmax, rms_norm) on one device and compare with a host computation",
       nullptr},
      {"run", kRun,
       "generate text with a GGUF model ({archs}) over a device list: the text streams to stdout, speeds and "
       "the devices to stderr",
       nullptr},
      {"plan", kPlan,
       "the scheduler's plan of one forward step of a model as Graphviz DOT or text: a box per split (device, "
       "layers, nodes, weights, compute memory) and the copies between them, or every node with --detail nodes",
       nullptr},
      {"bench", kBench,
       "prompt-processing and generation speed of a model (like llama-bench): a markdown table of tokens/s "
       "(mean +- stddev over repetitions) and the memory-bandwidth ceiling",
       nullptr},
      {"tokenize", kTokenize,
       "the token ids and pieces a GGUF file's tokenizer gives a text (reads only the tokenizer: "
       "vocabulary-only files work)",
       "BOS is prepended only when the file's tokenizer asks for it: tokenizer.ggml.add_bos_token, or without "
       "that key, yes for SentencePiece and llama-3-style BPE (pre llama-bpe, llama3, tekken, ...) and no for "
       "other BPE, yes ([CLS]) for WordPiece; EOS only with add_eos_token; WordPiece ends with [SEP] "
       "(add_sep_token, default yes). Each output line is an id and its 'piece' (\\n, \\t, \\\\, and \\xNN for "
       "control bytes and partial UTF-8)."},
      {"chat", kChat,
       "talk with a model: each stdin line is a user turn in the model's chat format, the reply streams to "
       "stdout",
       "A line /exit (or the end of input) ends the chat."},
      {"conformance", kConformance,
       "the conformance suite (ABI checks, every op and type the device claims against a host reference) on a "
       "plugin file or a device: a table and a summary; exit 0 when all pass",
       nullptr},
      {"serve", kServe,
       "an OpenAI-compatible HTTP server over a model: /v1/chat/completions and /v1/completions (streamed as "
       "server-sent events or not), many requests generated together in slots of one KV cache",
       "Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health (503 while the "
       "model loads), POST /tokenize, POST /detokenize, GET /metrics (Prometheus text). Request bodies over 8 MiB "
       "are refused (413). SIGINT or SIGTERM: new requests are refused, running ones cancelled, and the server "
       "exits 0."},
      {"worker", kWorker,
       "serve this rank's devices to rank 0 of an MPI job (remote devices r<rank>.<name>): what ranks >= 1 run",
       "Under mpirun or srun every rank >= 1 serves whatever command it was given, so 'mpirun -np 3 loom run -m M "
       "--device r1.cpu,r2.cpu,cpu' needs no separate worker; 'loom worker' is for MPMD launches "
       "('mpirun -np 1 loom run ... : -np 2 loom worker'). A worker validates every request and answers a "
       "malformed one with an error. LOOM_MPI_TIMEOUT (seconds, default 60): how long rank 0 waits for a "
       "worker's answer before the device is lost. See docs/distributed.md."},
      {"profile", kProfile,
       "run a ReLU-FFN model densely over a text (-p TEXT or -f FILE) and write each layer's neuron firing "
       "shares (blk.N.ffn_freq) to a GGUF for --sparse-budget",
       nullptr},
  };
  return table;
}

const OptionSpec* find_option(Command command, const std::string& flag) {
  for (const OptionSpec& o : option_table()) {
    if ((o.commands & command) && (flag == o.name || (o.short_flag && flag == o.short_flag))) return &o;
  }
  return nullptr;
}

const CommandSpec* find_command(const std::string& name) {
  for (const CommandSpec& c : command_table()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace loom::cli
