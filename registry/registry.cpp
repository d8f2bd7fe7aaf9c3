// Registry::load (discovery -> filters -> negotiation -> variant choice ->
// init -> device list with de-duplication), shutdown and the name helpers.
// Selection lives in selection.cpp, Device in device.cpp.
#include "loom/registry/registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "loom/runtime/log.hpp"
#include "registry/discovery.hpp"
#include "registry/filters.hpp"
#include "registry/loader.hpp"
#include "registry/plugin_handle.hpp"
#include "registry/probe.hpp"
#include "registry/secure_env.hpp"

namespace loom::registry {

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kFound: return "found";
    case Stage::kOpened: return "opened";
    case Stage::kNegotiated: return "negotiated";
    case Stage::kProbed: return "probed";
    case Stage::kReady: return "ready";
  }
  return "unknown";
}

const char* fate_name(Fate f) {
  switch (f) {
    case Fate::kReady: return "ready";
    case Fate::kUnavailable: return "unavailable";
    case Fate::kFailed: return "failed";
    case Fate::kSkipped: return "skipped";
  }
  return "unknown";
}

const char* device_type_name(loom_device_type_t t) {
  switch (t) {
    case LOOM_DEVICE_TYPE_CPU: return "cpu";
    case LOOM_DEVICE_TYPE_GPU: return "gpu";
    case LOOM_DEVICE_TYPE_IGPU: return "igpu";
    case LOOM_DEVICE_TYPE_ACCEL: return "accel";
  }
  return "unknown";
}

std::string library_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&library_dir), &info) == 0 || !info.dli_fname) return std::string();
  std::error_code ec;
  std::filesystem::path p = std::filesystem::canonical(info.dli_fname, ec);
  if (ec) p = std::filesystem::absolute(info.dli_fname, ec);
  return p.parent_path().string();
}

namespace {

// Discovery leaves a candidate still to be loaded as kFailed with no reason.

std::string label(const Candidate& c) { return c.variant.empty() ? c.plugin : c.plugin + "-" + c.variant; }

void skip(Candidate& c, const std::string& why) {
  c.fate = Fate::kSkipped;
  c.reason = why;
  LOOM_LOG_DEBUG("registry", c.path + ": skipped, " + why);
}

void fail(Candidate& c, const std::string& why) {
  c.fate = Fate::kFailed;
  c.reason = why;
  LOOM_LOG_DEBUG("registry", c.path + ": failed, " + why);
}

// "LOOM_<PLUGIN>_VARIANT" for a plugin name (upper case, '-' -> '_').
std::string variant_env_name(const std::string& plugin) {
  std::string v = "LOOM_";
  for (char ch : plugin) v += ch == '-' ? '_' : static_cast<char>(::toupper(static_cast<unsigned char>(ch)));
  return v + "_VARIANT";
}

// Same physical device: equal PCI bus id or equal UUID (both known).
bool same_device(const DeviceInfo& a, const DeviceInfo& b) {
  if (!a.pci_bus_id.empty() && !b.pci_bus_id.empty()) {
    std::string x = a.pci_bus_id, y = b.pci_bus_id;
    std::transform(x.begin(), x.end(), x.begin(), ::tolower);
    std::transform(y.begin(), y.end(), y.begin(), ::tolower);
    if (x == y) return true;
  }
  return !a.uuid.empty() && a.uuid == b.uuid;
}

// For hardware that two plugins drive, which plugin keeps the device
// whatever the search order: a plugin named in `prefer` (most preferred
// first: Options::prefer_plugins, else LOOM_DEVICE_PREFER), else the
// native API over Vulkan or any other — CUDA on NVIDIA GPUs. Equal ranks:
// the first plugin in search order keeps it.
int identity_rank(const DeviceInfo& info, const std::vector<std::string>& prefer) {
  for (size_t i = 0; i < prefer.size(); ++i) {
    if (prefer[i] == info.plugin) return 1000 - static_cast<int>(i);
  }
  return info.plugin == "cuda" ? 1 : 0;
}

// The plugin preference for shared devices: the options', else
// LOOM_DEVICE_PREFER (comma-separated plugin names) when the environment
// is read.
std::vector<std::string> device_preference(const Options& options) {
  if (!options.prefer_plugins.empty() || !options.use_env) return options.prefer_plugins;
  std::vector<std::string> out;
  const char* env = loom_getenv("LOOM_DEVICE_PREFER");
  if (env == nullptr) return out;
  std::string item;
  for (const char* c = env;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!item.empty()) out.push_back(item);
      item.clear();
      if (*c == '\0') break;
    } else if (!std::isspace(static_cast<unsigned char>(*c))) {
      item += *c;
    }
  }
  return out;
}

}  // namespace

Device::Device(loom_device_t* raw, DeviceInfo info, std::shared_ptr<PluginHandle> plugin)
    : raw_(raw), info_(std::move(info)), plugin_(std::move(plugin)) {}

// LOOM_<PLUGIN>_VARIANT (e.g. LOOM_CPU_VARIANT=avx2; "baseline" is the
// build without a variant suffix) keeps only that variant of the plugin in
// *group; the others are skipped. False when the named variant is absent or
// cannot run here (score 0): then every variant of the plugin fails with a
// reason that lists the variants and their scores.
static bool force_variant(const std::string& plugin, std::vector<Candidate>& cands,
                          std::vector<NegotiatedPlugin>& negotiated, std::vector<size_t>* group) {
  const std::string env = variant_env_name(plugin);
  const char* want = std::getenv(env.c_str());
  if (want == nullptr || *want == '\0') return true;
  const std::string name = std::string(want) == "baseline" ? "" : want;
  std::string listing;
  size_t chosen = SIZE_MAX;
  for (size_t k : *group) {
    const Candidate& c = cands[negotiated[k].candidate];
    listing += (listing.empty() ? "" : ", ") + (c.variant.empty() ? std::string("baseline") : c.variant) +
               " (score " + std::to_string(c.score) + ")";
    if (c.variant == name) chosen = k;
  }
  const std::string setting = env + "=" + want;
  std::string why;
  if (chosen == SIZE_MAX) {
    why = setting + " names no variant of " + plugin + "; found: " + listing;
  } else if (cands[negotiated[chosen].candidate].score == 0) {
    why = setting + ": this CPU or OS cannot run that variant (score 0); found: " + listing;
  }
  for (size_t k : *group) {
    Candidate& c = cands[negotiated[k].candidate];
    if (!why.empty()) {
      fail(c, why);
    } else if (k != chosen) {
      skip(c, "not the variant " + setting + " names");
    } else {
      continue;
    }
    discard_plugin(c, negotiated[k]);
  }
  if (!why.empty()) return false;
  *group = {chosen};
  return true;
}

// A variant from outside loom's folders (application paths,
// LOOM_PLUGIN_PATH) that won over one of loom's own: allowed, never silent.
static void warn_outside_variant(const Candidate& winner, const std::vector<size_t>& group,
                                 const std::vector<Candidate>& cands,
                                 const std::vector<NegotiatedPlugin>& negotiated,
                                 std::vector<std::string>* warnings) {
  if (is_builtin_origin(winner.origin)) return;
  for (size_t k : group) {
    const Candidate& c = cands[negotiated[k].candidate];
    if (&c == &winner || !is_builtin_origin(c.origin)) continue;
    warnings->push_back("plugin " + winner.plugin + ": variant " + label(winner) + " from " + winner.origin +
                        " (" + winner.path + ", score " + std::to_string(winner.score) +
                        ") is used instead of loom's own " + label(c) + " (score " + std::to_string(c.score) +
                        ")");
    LOOM_LOG_WARN("registry", warnings->back());
    return;
  }
}

std::unique_ptr<Registry> Registry::load(const Options& options) {
  std::unique_ptr<Registry> reg(new Registry());
  std::vector<Candidate>& cands = reg->candidates_;
  std::vector<bool> builtin_device;  // per entry of device_ptrs_
  const std::vector<std::string> prefer = device_preference(options);
  // The first plugin in search order keeps a physical device that a later
  // plugin shows again, unless the later one ranks higher for it
  // (identity_rank: LOOM_DEVICE_PREFER, else cuda over vulkan). A device name stays with its first
  // holder, except that loom's own plugins keep their names against
  // plugins from elsewhere; every such clash is a visible warning.
  auto add_device = [&](loom_device_t* raw, DeviceInfo info, const std::shared_ptr<PluginHandle>& handle,
                        const Candidate& from) {
    const bool builtin = is_builtin_origin(from.origin);
    for (size_t k = 0; k < reg->device_ptrs_.size(); ++k) {
      const Device* d = reg->device_ptrs_[k];
      if (d == nullptr) continue;  // hidden earlier in this call
      if (same_device(d->info(), info) && identity_rank(info, prefer) > identity_rank(d->info(), prefer)) {
        const std::string why = d->name() + " (same device as " + info.name + ")";
        LOOM_LOG_DEBUG("registry", "hiding device " + why + ": plugin " + info.plugin + " is preferred");
        reg->duplicates_.push_back(why);
        reg->hidden_ptrs_.push_back(reg->device_ptrs_[k]);  // still selectable by name
        reg->device_ptrs_[k] = nullptr;
        continue;
      }
      if (same_device(d->info(), info)) {
        const std::string why = info.name + " (same device as " + d->name() + ")";
        LOOM_LOG_DEBUG("registry", "hiding device " + why);
        reg->duplicates_.push_back(why);
        // Out of the list and the policies, but a user who names it gets it.
        reg->devices_.push_back(std::make_unique<Device>(raw, std::move(info), handle));
        reg->hidden_ptrs_.push_back(reg->devices_.back().get());
        return;
      }
      if (d->name() != info.name) continue;
      if (builtin && !builtin_device[k]) {
        const std::string why = "device name '" + info.name + "' of plugin " + d->info().plugin +
                                " is loom's own plugin " + info.plugin + "'s; the " + d->info().plugin +
                                " device is hidden";
        LOOM_LOG_WARN("registry", why);
        reg->warnings_.push_back(why);
        reg->duplicates_.push_back(d->name() + " (name taken back by plugin " + info.plugin + ")");
        reg->device_ptrs_[k] = nullptr;
        continue;
      }
      const std::string why = "device name '" + info.name + "' of plugin " + info.plugin + " (" + from.path +
                              ") is already taken by plugin " + d->info().plugin + "; that device is hidden";
      LOOM_LOG_WARN("registry", why);
      reg->warnings_.push_back(why);
      reg->duplicates_.push_back(info.name + " (name already taken by plugin " + d->info().plugin + ")");
      return;
    }
    reg->devices_.push_back(std::make_unique<Device>(raw, std::move(info), handle));
    reg->device_ptrs_.push_back(reg->devices_.back().get());
    builtin_device.push_back(builtin);
    for (size_t k = 0; k < reg->device_ptrs_.size();) {
      if (reg->device_ptrs_[k]) {
        ++k;
        continue;
      }
      reg->device_ptrs_.erase(reg->device_ptrs_.begin() + static_cast<std::ptrdiff_t>(k));
      builtin_device.erase(builtin_device.begin() + static_cast<std::ptrdiff_t>(k));
    }
  };
  cands = discover(options, &reg->warnings_);
  if (options.use_env) apply_env_filters(cands);
  const ProbeSettings probe = probe_settings(options, &reg->warnings_);
  if (probe.isolated) probe_candidates(cands, options, probe);

  // Negotiate every remaining candidate; group survivors by plugin name in
  // search order so variants compete.
  std::vector<NegotiatedPlugin> negotiated;
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> groups;  // plugin -> indices into negotiated
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!pending(cands[i])) continue;
    NegotiatedPlugin n;
    if (!negotiate_candidate(cands[i], i, &n)) continue;
    if (!groups.count(cands[i].plugin)) order.push_back(cands[i].plugin);
    groups[cands[i].plugin].push_back(negotiated.size());
    negotiated.push_back(std::move(n));
  }

  for (const auto& plugin : order) {
    std::vector<size_t> group = groups[plugin];
    // Best score first; equal scores keep search order.
    std::stable_sort(group.begin(), group.end(), [&](size_t a, size_t b) {
      return cands[negotiated[a].candidate].score > cands[negotiated[b].candidate].score;
    });
    if (options.use_env && !force_variant(plugin, cands, negotiated, &group)) continue;
    const Candidate* winner = nullptr;
    for (size_t k : group) {
      NegotiatedPlugin& n = negotiated[k];
      Candidate& c = cands[n.candidate];
      if (c.score == 0) {
        skip(c, "cannot run here (score 0)");
        discard_plugin(c, n);
        continue;
      }
      if (winner) {
        skip(c, "lost to variant " + label(*winner) + " (score " + std::to_string(winner->score) + " > " +
                    std::to_string(c.score) + ")");
        discard_plugin(c, n);
        continue;
      }
      std::vector<ListedDevice> listed;
      std::shared_ptr<PluginHandle> handle = start_plugin(c, n, &listed);
      // A failed variant lets the next best try; unavailable hardware is
      // the same for every variant, so that ends the group.
      if (c.fate == Fate::kFailed) continue;
      winner = &c;
      if (!handle) continue;
      warn_outside_variant(c, group, cands, negotiated, &reg->warnings_);
      reg->plugins_.push_back(handle);
      for (auto& d : listed) add_device(d.raw, std::move(d.info), handle, c);
    }
  }
  LOOM_LOG_DEBUG("registry", std::to_string(cands.size()) + " candidate(s), " +
                                 std::to_string(reg->plugins_.size()) + " plugin(s) ready, " +
                                 std::to_string(reg->device_ptrs_.size()) + " device(s)");
  return reg;
}

Registry::~Registry() {
  // Destroying the registry is its owner's explicit shutdown: plugins with
  // no live objects unload now, the others when their last object goes.
  Status st = shutdown();
  if (!st.ok()) LOOM_LOG_DEBUG("registry", st.message());
}

Device* Registry::device(std::string_view name) const {
  for (Device* d : device_ptrs_) {
    if (d->name() == name) return d;
  }
  for (Device* d : hidden_ptrs_) {
    if (d->name() == name) return d;
  }
  return nullptr;
}

size_t Registry::live_objects() const {
  size_t n = 0;
  for (const auto& p : plugins_) n += p->live_objects();
  return n;
}

Status Registry::shutdown() {
  if (!shut_down_) {
    shut_down_ = true;
    // Devices belong to the plugins being unloaded: forget them first.
    device_ptrs_.clear();
    hidden_ptrs_.clear();
    devices_.clear();
    duplicates_.clear();
  }
  std::string busy;
  for (const auto& p : plugins_) {
    size_t live = p->request_shutdown();
    if (live == 0) continue;
    busy += std::string(busy.empty() ? "" : ", ") + p->name() + " (" + std::to_string(live) + ")";
  }
  if (!busy.empty()) {
    return aborted("[registry.shutdown] buffers/streams still alive in plugin(s) " + busy +
                   "; each unloads when its last object is released");
  }
  return Status();
}

}  // namespace loom::registry
