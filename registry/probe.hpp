// Isolated probing: each plugin file is first loaded in a short-lived child
// process (the loom-probe helper: posix_spawn + exec, never a bare fork of a
// possibly multi-threaded host), which runs the whole load pipeline and
// reports back through a pipe. A crash, an exit or a hang there becomes a
// record ("crashed with SIGSEGV in init, probed in a child", "no answer in
// 5 s") and the file is never loaded into the host. Internal to libloom.
#pragma once

#include <string>
#include <vector>

#include "registry/probe_record.hpp"

namespace loom::registry {

// The helper next to libloom, in <folder of libloom>/loom/ or in the
// install folder; "" when there is none.
std::string find_probe_helper();

// Probe the files concurrently (a few children at a time), each given
// timeout_s seconds. One record per path, in order. Never throws.
std::vector<ProbeRecord> probe_in_children(const std::string& helper, const std::vector<std::string>& paths,
                                           double timeout_s);

// How the helper watches what the plugin reads (tools/loom-probe/watch.hpp):
// start(sink) makes every read of an environment variable ('e'), folder
// ('d') or file ('f') by any code in the process call sink(kind, name) at
// once. Null: no watch (the record then lists only base_inputs() and the
// shared objects the plugin mapped).
struct ProbeWatch {
  void (*start)(void (*sink)(char kind, const char* name)) = nullptr;
};

// The helper's main (argv: loom-probe --fd N <plugin file>): load the file
// in this process, write the record to fd N (with the inputs its answer
// depended on, registry/probe_inputs.hpp), exit without running static
// destructors.
int probe_child_main(int argc, char** argv, const ProbeWatch& watch = {});

}  // namespace loom::registry

namespace loom::registry {

struct ProbeSettings {
  bool isolated = true;
  double timeout_s = 5.0;
  std::string helper;     // loom-probe's path (isolated only)
  std::string cache_dir;  // "" = no cache
};

// Resolve Options::probe, LOOM_PLUGIN_PROBE (isolated|inline),
// LOOM_PLUGIN_PROBE_TIMEOUT (seconds) and where the helper and the cache
// are. Problems (a bad value, a missing helper) go to *warnings.
ProbeSettings probe_settings(const Options& options, std::vector<std::string>* warnings);

// Probe every pending candidate (cache first, then children for the rest,
// all at once). A file that crashed, exited or hung in its child fails with
// that reason and is never loaded here; with options.wanted_devices set, a
// file whose probe listed none of those devices is skipped ("not needed").
void probe_candidates(std::vector<Candidate>& cands, const Options& options, const ProbeSettings& settings);

}  // namespace loom::registry
