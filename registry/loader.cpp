#include "registry/loader.hpp"

#include <cstring>
#include <filesystem>

#include "loom/runtime/log.hpp"
#include "registry/guard.hpp"
#include "registry/host_services.hpp"

namespace loom::registry {
namespace {

constexpr size_t kMaxDevices = 4096;  // more than this is a broken device_count

StepHook g_step_hook = nullptr;
void step(const char* name) {
  if (g_step_hook) g_step_hook(name);
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

void fail_load(Candidate& c, const std::string& what) {
  c.fate = Fate::kFailed;
  c.reason = load_prefix(c) + what;
  LOOM_LOG_INFO("registry", c.reason);
}

std::string hex_uuid(const uint8_t uuid[16]) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  bool any = false;
  for (int i = 0; i < 16; ++i) {
    s += digits[uuid[i] >> 4];
    s += digits[uuid[i] & 0xF];
    any = any || uuid[i] != 0;
  }
  return any ? s : std::string();
}

std::string size_text(const char* what, size_t got, size_t need) {
  return std::string(what) + " struct_size " + std::to_string(got) +
         " is smaller than the ABI 1.0 size " + std::to_string(need);
}

// Check one device's handle and tables, then read its properties. Returns
// "" on success, else what is wrong (without the candidate prefix).
std::string check_device(loom_device_t* dev, size_t index, ListedDevice* out) {
  const std::string at = "device " + std::to_string(index) + ": ";
  if (!dev) return at + "device_get returned NULL";
  if (dev->struct_size < kDeviceSize10) return at + size_text("loom_device_t", dev->struct_size, kDeviceSize10);
  const loom_device_iface_t* di = dev->iface;
  if (!di) return at + "iface is NULL";
  if (di->struct_size < kDeviceIfaceSize10) {
    return at + size_text("loom_device_iface_t", di->struct_size, kDeviceIfaceSize10);
  }
  const char* missing = !di->get_props              ? "get_props"
                        : !di->buffer_type          ? "buffer_type"
                        : !di->supports_op          ? "supports_op"
                        : !di->supports_buffer_type ? "supports_buffer_type"
                        : !di->stream_create        ? "stream_create"
                                                    : nullptr;
  if (missing) return at + "required entry loom_device_iface_t." + missing + " is NULL";

  loom_device_props_t props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  loom_status_t* raw = nullptr;
  std::string err = call_plugin([&] { raw = di->get_props(dev, &props); });
  if (!err.empty()) return at + "get_props " + err;
  Status st = status_from_abi(raw);
  if (!st.ok()) return at + "get_props failed: " + st.to_string();
  if (!props.name || !*props.name) return at + "get_props gave no name";
  const std::string name = props.name;
  if (props.type < LOOM_DEVICE_TYPE_CPU || props.type > LOOM_DEVICE_TYPE_ACCEL) {
    return "device " + name + ": type " + std::to_string(props.type) + " is not a loom_device_type_t";
  }

  loom_buffer_type_t* buft = nullptr;
  err = call_plugin([&] { buft = di->buffer_type(dev); });
  if (!err.empty()) return "device " + name + ": buffer_type " + err;
  if (!buft) return "device " + name + ": buffer_type returned NULL";
  if (buft->struct_size < kBufferTypeSize10) {
    return "device " + name + ": " + size_text("loom_buffer_type_t", buft->struct_size, kBufferTypeSize10);
  }
  const loom_buffer_type_iface_t* bi = buft->iface;
  if (!bi) return "device " + name + ": buffer type iface is NULL";
  if (bi->struct_size < kBufferTypeIfaceSize10) {
    return "device " + name + ": " +
           size_text("loom_buffer_type_iface_t", bi->struct_size, kBufferTypeIfaceSize10);
  }
  const char* bmissing = !bi->name ? "name" : !bi->alloc ? "alloc" : !bi->alignment ? "alignment"
                       : !bi->is_host ? "is_host" : nullptr;
  if (bmissing) return "device " + name + ": required entry loom_buffer_type_iface_t." + bmissing + " is NULL";
  size_t alignment = 0;
  err = call_plugin([&] { alignment = bi->alignment(buft); });
  if (!err.empty()) return "device " + name + ": buffer type alignment " + err;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return "device " + name + ": buffer type alignment " + std::to_string(alignment) +
           " is not a power of two";
  }

  DeviceInfo& info = out->info;
  out->raw = dev;
  info.name = name;
  info.description = props.description ? props.description : "";
  info.type = static_cast<loom_device_type_t>(props.type);
  info.memory_total = props.memory_total;
  info.memory_free = props.memory_free;
  info.pci_bus_id.assign(props.pci_bus_id, strnlen(props.pci_bus_id, sizeof props.pci_bus_id));
  info.uuid = props.has_uuid ? hex_uuid(props.uuid) : std::string();
  info.caps = props.caps;
  return std::string();
}

}  // namespace

void set_step_hook(StepHook hook) { g_step_hook = hook; }

std::string load_prefix(const Candidate& c) { return "[registry.load] " + file_name(c.path) + ": "; }

bool negotiate_candidate(Candidate& c, size_t index, NegotiatedPlugin* out) {
  const std::string host = abi_version_text(LOOM_ABI_VERSION);
  DynamicLibrary lib;
  std::string err;
  step("open");
  if (!lib.open(c.path, &err)) {
    fail_load(c, "dlopen failed: " + err);
    return false;
  }
  c.stage = Stage::kOpened;
  LOOM_LOG_DEBUG("registry", c.path + ": opened");

  auto give_up = [&](const std::string& why) {
    fail_load(c, why);
    lib.close();
    return false;
  };
  void* sym = lib.symbol(LOOM_PLUGIN_QUERY_SYMBOL, &err);
  if (!sym) return give_up("no " LOOM_PLUGIN_QUERY_SYMBOL " symbol (" + err + ")");
  auto query = reinterpret_cast<loom_plugin_query_fn>(sym);
  const loom_plugin_t* t = nullptr;
  step("query");
  err = call_plugin([&] { t = query(LOOM_ABI_VERSION, host_services()); });
  if (!err.empty()) return give_up(LOOM_PLUGIN_QUERY_SYMBOL " " + err);
  if (!t) return give_up(LOOM_PLUGIN_QUERY_SYMBOL " returned NULL (the plugin cannot serve host ABI " + host + ")");

  // Read only what the struct_size covers; the version decides the layout.
  if (t->struct_size < LOOM_STRUCT_END(loom_plugin_t, abi_version)) {
    return give_up(size_text("loom_plugin_t", t->struct_size, kPluginSize10));
  }
  c.abi_version = t->abi_version;
  const std::string theirs = abi_version_text(t->abi_version);
  if (LOOM_ABI_MAJOR(t->abi_version) != LOOM_ABI_VERSION_MAJOR) {
    return give_up("needs ABI " + std::to_string(LOOM_ABI_MAJOR(t->abi_version)) + ".x, host has " + host +
                   " (plugin built for " + theirs + ")");
  }
  if (t->struct_size < kPluginSize10) return give_up(size_text("loom_plugin_t", t->struct_size, kPluginSize10));
  const char* missing = !t->name ? "name" : !t->init ? "init" : !t->shutdown ? "shutdown"
                      : !t->device_count ? "device_count" : !t->device_get ? "device_get" : nullptr;
  if (missing) return give_up(std::string("required loom_plugin_t.") + missing + " is NULL");
  if (c.plugin != t->name) {
    return give_up("plugin calls itself '" + std::string(t->name) + "' but its file name says '" + c.plugin + "'");
  }
  c.plugin_version = t->version ? t->version : "";
  c.stage = Stage::kNegotiated;
  if (LOOM_ABI_MINOR(t->abi_version) > LOOM_ABI_VERSION_MINOR) {
    LOOM_LOG_INFO("registry", c.path + ": built for ABI " + theirs + ", host has " + host +
                                  "; using the " + host + " subset");
  }
  LOOM_LOG_DEBUG("registry", c.path + ": negotiated ABI " + theirs + " (host " + host + "), plugin version " +
                                 c.plugin_version);

  int32_t score = 1;
  if (t->score) {
    step("score");
    err = call_plugin([&] { score = t->score(); });
    if (!err.empty()) return give_up("score " + err);
  }
  c.score = score < 0 ? 0 : score;
  LOOM_LOG_DEBUG("registry", c.path + ": score " + std::to_string(c.score));
  out->candidate = index;
  out->library = std::move(lib);
  out->table = t;
  return true;
}

void discard_plugin(Candidate& c, NegotiatedPlugin& n) {
  unload_plugin(c.plugin, n.library, n.table, nullptr, /*call_shutdown=*/false);
  n.table = nullptr;
}

std::shared_ptr<PluginHandle> start_plugin(Candidate& c, NegotiatedPlugin& n,
                                           std::vector<ListedDevice>* devices) {
  const loom_plugin_t* t = n.table;
  void* context = nullptr;
  loom_status_t* raw = nullptr;
  step("init");
  std::string err = call_plugin([&] { raw = t->init(&context); });
  if (!err.empty()) {
    fail_load(c, "init " + err);
    discard_plugin(c, n);
    return nullptr;
  }
  Status st = status_from_abi(raw);
  if (!st.ok()) {
    if (st.code() == StatusCode::kUnavailable) {
      c.stage = Stage::kProbed;
      c.fate = Fate::kUnavailable;
      c.reason = st.message();
      LOOM_LOG_DEBUG("registry", c.path + ": unavailable: " + c.reason);
    } else {
      fail_load(c, "init failed: " + st.to_string());
    }
    discard_plugin(c, n);  // shutdown is not called after a failed init
    return nullptr;
  }
  c.stage = Stage::kProbed;
  LOOM_LOG_DEBUG("registry", c.path + ": init OK");

  auto stop = [&](const std::string& why) {
    fail_load(c, why);
    devices->clear();
    unload_plugin(c.plugin, n.library, t, context, /*call_shutdown=*/true);
    n.table = nullptr;
    return nullptr;
  };
  size_t count = 0;
  step("devices");
  err = call_plugin([&] { count = t->device_count(context); });
  if (!err.empty()) return stop("device_count " + err);
  if (count > kMaxDevices) return stop("device_count " + std::to_string(count) + " is implausible");
  for (size_t i = 0; i < count; ++i) {
    loom_device_t* dev = nullptr;
    err = call_plugin([&] { dev = t->device_get(context, i); });
    if (!err.empty()) return stop("device_get(" + std::to_string(i) + ") " + err);
    ListedDevice listed;
    std::string bad = check_device(dev, i, &listed);
    if (!bad.empty()) return stop(bad);
    listed.info.plugin = c.plugin;
    LOOM_LOG_DEBUG("registry", c.path + ": device " + listed.info.name + " (" +
                                   device_type_name(listed.info.type) + ")");
    devices->push_back(std::move(listed));
  }
  c.stage = Stage::kReady;
  c.fate = Fate::kReady;
  c.reason.clear();
  c.device_count = count;
  auto handle = std::make_shared<PluginHandle>(c.plugin, c.path, std::move(n.library), t, context);
  n.table = nullptr;
  return handle;
}

}  // namespace loom::registry
