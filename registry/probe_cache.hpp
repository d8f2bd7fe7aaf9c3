// The on-disk cache of isolated probe results, so the cost of probing a
// plugin file in a child is paid once per file version and environment.
// Keyed by canonical path + size + mtime + inode + device + host ABI + loom
// version, and used only while every input the record lists still holds
// (registry/probe_inputs.hpp); one small text file per key under
// <cache>/probe/, written atomically (temp file + rename), so concurrent
// processes never see half a record. Internal to libloom.
#pragma once

#include <string>

#include "registry/probe_record.hpp"

namespace loom::registry {

// The cache folder: LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else
// $HOME/.cache/loom; "" (no cache) under secure execution or when none of
// these is an absolute path.
std::string probe_cache_dir();
// The key of a plugin file as it is now; "" when it cannot be stat'ed.
std::string probe_cache_key(const std::string& path);
// The cached record for key, if any and if every input it lists
// (registry/probe_inputs.hpp: environment variables, driver files) is
// unchanged.
bool probe_cache_read(const std::string& dir, const std::string& key, ProbeRecord* out);
// Store a record (errors only logged at debug level: the cache is optional).
void probe_cache_write(const std::string& dir, const std::string& key, const ProbeRecord& r);

}  // namespace loom::registry
