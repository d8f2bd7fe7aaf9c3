// `loom devices`: the fate of every plugin candidate and every device.
#include <cstdio>
#include <string>

#include "cli.hpp"
#include "json.hpp"
#include "loom/plugin.h"

namespace loom::cli {
namespace {

std::string caps_text(uint32_t caps) {
  std::string s;
  auto add = [&](uint32_t bit, const char* name) {
    if (caps & bit) s += std::string(s.empty() ? "" : ",") + name;
  };
  add(LOOM_DEVICE_CAP_ASYNC, "async");
  add(LOOM_DEVICE_CAP_EVENTS, "events");
  add(LOOM_DEVICE_CAP_HOST_BUFFER, "host-buffer");
  add(LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR, "buffer-from-host-ptr");
  add(LOOM_DEVICE_CAP_EMULATED, "emulated");
  return s.empty() ? "none" : s;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string abi_text(uint32_t v) {
  return std::to_string(LOOM_ABI_MAJOR(v)) + "." + std::to_string(LOOM_ABI_MINOR(v));
}

void print_json(const registry::Registry& reg) {
  JsonWriter w;
  w.begin_object();
  w.key("loom_version").value(LOOM_VERSION_STRING);
  w.key("abi_version").value(abi_text(LOOM_ABI_VERSION));
  w.key("plugins").begin_array();
  for (const auto& c : reg.candidates()) {
    w.begin_object();
    w.key("plugin").value(c.plugin);
    w.key("variant").value(c.variant);
    w.key("path").value(c.path);
    w.key("origin").value(c.origin);
    w.key("stage").value(registry::stage_name(c.stage));
    w.key("fate").value(registry::fate_name(c.fate));
    w.key("reason").value(c.reason);
    if (c.abi_version) {
      w.key("abi_version").value(abi_text(c.abi_version));
    } else {
      w.key("abi_version").null();
    }
    w.key("score").value(static_cast<int64_t>(c.score));
    w.key("version").value(c.plugin_version);
    w.key("devices").value(static_cast<uint64_t>(c.device_count));
    w.end_object();
  }
  w.end_array();
  w.key("devices").begin_array();
  for (const auto* d : reg.devices()) {
    const auto& i = d->info();
    w.begin_object();
    w.key("name").value(i.name);
    w.key("plugin").value(i.plugin);
    w.key("description").value(i.description);
    w.key("type").value(registry::device_type_name(i.type));
    w.key("memory_total").value(i.memory_total);
    w.key("memory_free").value(i.memory_free);
    w.key("pci_bus_id").value(i.pci_bus_id);
    w.key("uuid").value(i.uuid);
    w.key("caps").begin_array();
    std::string caps = caps_text(i.caps);
    if (caps != "none") {
      size_t pos = 0;
      while (pos <= caps.size()) {
        size_t comma = caps.find(',', pos);
        if (comma == std::string::npos) comma = caps.size();
        w.value(caps.substr(pos, comma - pos));
        pos = comma + 1;
      }
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("duplicates").begin_array();
  for (const auto& s : reg.duplicates()) w.value(s);
  w.end_array();
  w.key("warnings").begin_array();
  for (const auto& s : reg.warnings()) w.value(s);
  w.end_array();
  w.end_object();
  std::printf("%s\n", w.str().c_str());
}

void print_text(const registry::Registry& reg) {
  std::printf("loom %s, plugin ABI %s\n\nplugins (in search order):\n", LOOM_VERSION_STRING,
              abi_text(LOOM_ABI_VERSION).c_str());
  if (reg.candidates().empty()) {
    std::printf("  (no plugin files found: set LOOM_PLUGIN_PATH or use --plugin-path)\n");
  }
  for (const auto& c : reg.candidates()) {
    std::string name = c.plugin + (c.variant.empty() ? "" : "-" + c.variant);
    std::string fate = registry::fate_name(c.fate);
    std::printf("  %-14s %-12s %s\n", name.c_str(), fate.c_str(), c.path.c_str());
    if (c.fate == registry::Fate::kReady) {
      std::printf("  %-14s %-12s ABI %s, version %s, %zu device(s)\n", "", "",
                  abi_text(c.abi_version).c_str(), c.plugin_version.c_str(), c.device_count);
    } else if (!c.reason.empty()) {
      std::printf("  %-14s %-12s %s: %s\n", "", "", registry::stage_name(c.stage), c.reason.c_str());
    }
  }
  std::printf("\ndevices:\n");
  if (reg.devices().empty()) std::printf("  (none)\n");
  for (const auto* d : reg.devices()) {
    const auto& i = d->info();
    std::printf("  %-8s %-6s %s (plugin %s)\n", i.name.c_str(), registry::device_type_name(i.type),
                i.description.c_str(), i.plugin.c_str());
    // memory_free 0 means unknown (ABI: "0 if unknown"), not full.
    std::string mem = i.memory_total ? gib(i.memory_total) + " total, " +
                                           (i.memory_free ? gib(i.memory_free) + " free" : std::string("free unknown"))
                                     : std::string("unknown");
    std::string ident;
    if (!i.pci_bus_id.empty()) ident += "pci " + i.pci_bus_id;
    if (!i.uuid.empty()) ident += std::string(ident.empty() ? "" : ", ") + "uuid " + i.uuid;
    if (ident.empty()) ident = "none";
    std::printf("  %-8s memory: %s; identity: %s; caps: %s\n", "", mem.c_str(), ident.c_str(),
                caps_text(i.caps).c_str());
  }
  for (const auto& s : reg.duplicates()) std::printf("  hidden duplicate: %s\n", s.c_str());
  if (!reg.warnings().empty()) std::printf("\nwarnings:\n");
  for (const auto& s : reg.warnings()) std::printf("  %s\n", s.c_str());
}

}  // namespace

int cmd_devices(std::vector<std::string> args) {
  CommonOptions opts;
  std::string error;
  if (!take_common_options(args, &opts, &error)) {
    std::fprintf(stderr, "loom devices: %s\n", error.c_str());
    return 2;
  }
  if (!args.empty()) {
    std::fprintf(stderr, "loom devices: unexpected argument '%s' (try 'loom --help')\n", args[0].c_str());
    return 2;
  }
  auto reg = load_registry(opts);
  if (opts.json) {
    print_json(*reg);
  } else {
    print_text(*reg);
  }
  return 0;
}

}  // namespace loom::cli
