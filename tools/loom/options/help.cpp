#include "options/help.hpp"

#include "llm/chat/chat_template.hpp"
#include "llm/model/arch.hpp"

namespace loom::cli {
namespace {

constexpr size_t kWidth = 80;
constexpr size_t kHelpColumn = 25;

const char kEnvironment[] =
    "environment:\n"
    "  LOOM_PLUGIN_PATH       colon-separated folders searched for libloom-*.so\n"
    "  LOOM_PLUGINS_SELECT    comma-separated globs: load only matching plugins\n"
    "  LOOM_PLUGINS_DISABLE   comma-separated globs: never load matching plugins\n"
    "  LOOM_DEVICES           device list or policy (cpu, cuda0,cpu, auto,\n"
    "                         gpu-first, cpu-only) of run, plan, bench, chat,\n"
    "                         profile and check when --device is not given\n"
    "                         (unset: auto)\n"
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
    "  LOOM_MODEL             default model file of the model commands\n"
    "  LOOM_MODELS_DIR        folder searched for stories260K.gguf by them\n"
    "  LOOM_API_KEY           the key loom serve asks clients for (--api-key)\n"
    "  LOOM_VULKAN_DEVICES    comma-separated Vulkan device indices to expose\n"
    "  LOOM_VULKAN_LOADER     Vulkan loader file (default libvulkan.so.1)\n"
    "  LOOM_SCHED_DEBUG       1: print every split and why each node went where\n"
    "  LOOM_SCHED_CHECK       1: poison memory a split no longer owns (debug)\n"
    "  LOOM_SCHED_PIPELINING  input copies in flight per async device (default 1)\n"
    "  LOOM_CPU_REFERENCE     1: the cpu device runs MUL_MAT on its reference loop\n";

const char kExitStatus[] = "exit status: 0 success, 1 the command failed, 2 bad arguments\n";

// Fill the names that live in llm/.
std::string fill(std::string text) {
  const std::pair<const char*, std::string> names[] = {{"{archs}", llm::supported_archs()},
                                                       {"{chat_formats}", llm::chat_format_names()}};
  for (const auto& [key, value] : names) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) {
      text.replace(at, std::string(key).size(), value);
    }
  }
  return text;
}

// `text` in lines of at most kWidth columns, each starting at `indent`
// (the first after `first`, which is padded to it or given a line alone).
std::string wrap(const std::string& first, const std::string& text, size_t indent) {
  std::string out = first;
  std::string line;
  if (!out.empty() && out.size() + 1 > indent) out += "\n";  // too long: the text starts below
  const std::string pad(indent, ' ');
  auto flush = [&] {
    if (line.empty()) return;
    if (out.empty() || out.back() == '\n') {
      out += pad;
    } else {
      out += std::string(indent - out.size(), ' ');
    }
    out += line + "\n";
    line.clear();
  };
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && indent + line.size() + 1 + word.size() > kWidth) flush();
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  flush();
  return out;
}

std::string flags_of(const OptionSpec& o) {
  std::string s = "  ";
  if (o.short_flag) s += std::string(o.short_flag) + ", ";
  s += o.name;
  if (o.value) s += std::string(" ") + o.value;
  return s;
}

std::string commands_of(uint32_t bits) {
  std::string s;
  for (const CommandSpec& c : command_table()) {
    if (bits & c.bit) s += (s.empty() ? "" : ", ") + std::string(c.name);
  }
  return s;
}

}  // namespace

std::string main_help() {
  std::string out =
      "loom - run tensor graphs on whatever hardware this machine has\n\n"
      "usage: loom <command> [options]     ('loom <command> --help': its options)\n\ncommands:\n";
  for (const CommandSpec& c : command_table()) out += wrap(std::string("  ") + c.name, fill(c.summary), 19);
  out += "\noptions (the commands that take each in brackets):\n";
  for (const OptionSpec& o : option_table()) {
    if (o.hidden) continue;
    const std::string which = o.commands == kEveryCommand ? "every command" : commands_of(o.commands);
    out += wrap(flags_of(o), "[" + which + "] " + fill(o.help), kHelpColumn);
  }
  for (const CommandSpec& c : command_table()) {
    if (c.notes) out += "\n" + wrap(std::string(c.name) + ":", fill(c.notes), 2);
  }
  out += "\n  -h, --help             this help\n  --version              loom and plugin ABI versions\n\n";
  return out + kEnvironment + "\n" + kExitStatus;
}

std::string command_help(const CommandSpec& c) {
  std::string out = "usage: loom " + std::string(c.name) + " [options]\n\n" + wrap("", fill(c.summary), 0) +
                    "\noptions:\n";
  for (const OptionSpec& o : option_table()) {
    if (!o.hidden && (o.commands & c.bit)) out += wrap(flags_of(o), fill(o.help), kHelpColumn);
  }
  out += "  -h, --help             this help\n";
  if (c.notes) out += "\n" + wrap("", fill(c.notes), 0);
  return out + "\n" + kExitStatus;
}

}  // namespace loom::cli
