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
  add(LOOM_DEVICE_CAP_NO_CUT, "no-cut");
  add(LOOM_DEVICE_CAP_ORDERED_COPY, "ordered-copy");
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

void print_json(const registry::Registry& reg, bool verbose) {
  Json out;
  out["loom_version"] = LOOM_VERSION_STRING;
  out["abi_version"] = abi_text(LOOM_ABI_VERSION);
  out["plugins"] = Json::array();
  for (const auto& c : reg.candidates()) {
    Json p;
    p["plugin"] = c.plugin;
    p["variant"] = c.variant;
    p["path"] = c.path;
    p["origin"] = c.origin;
    p["stage"] = registry::stage_name(c.stage);
    p["fate"] = registry::fate_name(c.fate);
    p["reason"] = c.reason;
    p["abi_version"] = c.abi_version ? Json(abi_text(c.abi_version)) : Json(nullptr);
    p["score"] = c.score;
    p["version"] = c.plugin_version;
    p["devices"] = c.device_count;
    out["plugins"].push_back(std::move(p));
  }
  out["devices"] = Json::array();
  for (const auto* d : reg.devices()) {
    const auto& i = d->info();
    Json dev;
    dev["name"] = i.name;
    dev["plugin"] = i.plugin;
    dev["description"] = i.description;
    dev["type"] = registry::device_type_name(i.type);
    dev["memory_total"] = i.memory_total;
    dev["memory_free"] = i.memory_free;
    dev["pci_bus_id"] = i.pci_bus_id;
    dev["uuid"] = i.uuid;
    dev["caps"] = Json::array();
    const std::string caps = caps_text(i.caps);
    if (caps != "none") {
      size_t pos = 0;
      while (pos <= caps.size()) {
        size_t comma = caps.find(',', pos);
        if (comma == std::string::npos) comma = caps.size();
        dev["caps"].push_back(caps.substr(pos, comma - pos));
        pos = comma + 1;
      }
    }
    if (verbose) dev["details"] = device_details(*d);
    out["devices"].push_back(std::move(dev));
  }
  out["duplicates"] = reg.duplicates();
  out["warnings"] = reg.warnings();
  put_json(out);
}

void print_text(const registry::Registry& reg, bool verbose) {
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
    if (!verbose) continue;
    const std::string details = device_details(*d);
    for (size_t pos = 0; pos < details.size();) {
      size_t end = details.find('\n', pos);
      if (end == std::string::npos) end = details.size();
      std::printf("  %-8s %s\n", "", details.substr(pos, end - pos).c_str());
      pos = end + 1;
    }
  }
  for (const auto& s : reg.duplicates()) std::printf("  hidden duplicate: %s\n", s.c_str());
  if (!reg.warnings().empty()) std::printf("\nwarnings:\n");
  for (const auto& s : reg.warnings()) std::printf("  %s\n", s.c_str());
}

}  // namespace

std::string device_details(const registry::Device& d) {
  const auto* ext = static_cast<const loom_ext_details_t*>(d.extension(LOOM_EXT_DETAILS, LOOM_EXT_DETAILS_VERSION));
  if (ext == nullptr || ext->struct_size < sizeof(loom_ext_details_t) || ext->get_details == nullptr) return "";
  std::string text(256, '\0');
  for (int tries = 0; tries < 3; ++tries) {
    const size_t n = ext->get_details(d.raw(), text.data(), text.size());
    if (n < text.size()) return text.substr(0, n);
    text.assign(n + 1, '\0');  // grew between the calls: ask again
  }
  return "";
}

int cmd_devices(std::vector<std::string> args) {
  CommonOptions opts;
  ParsedOptions parsed;
  if (std::string error = parse_command(kDevices, args, &opts, &parsed); !error.empty()) {
    std::fprintf(stderr, "loom devices: %s (try 'loom devices --help')\n", error.c_str());
    return 2;
  }
  const bool verbose = parsed.has("--verbose");
  auto reg = load_registry(opts);
  if (opts.json) {
    print_json(*reg, verbose);
  } else {
    print_text(*reg, verbose);
  }
  return 0;
}

}  // namespace loom::cli
