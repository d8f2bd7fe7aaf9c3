// What a probe's answer depended on, so a cached answer is used only while
// all of it is unchanged: the environment variables the plugin (and the
// driver libraries it loaded) read, the shared objects it mapped, the
// files and folders it read (driver manifests, their folders), and what
// the dynamic linker searches (LD_LIBRARY_PATH, LD_PRELOAD,
// /etc/ld.so.cache, which a driver install rewrites).
//
// Each input is one line of text naming the thing and its state now:
//   env NAME <hash of the value> | env NAME unset
//   file <size>:<mtime ns> PATH  | file absent PATH
//   dir <mtime ns> PATH          | dir absent PATH
// The child of an isolated probe writes these lines into its record; the
// cache reader recomputes each line and compares. Internal to libloom.
#pragma once

#include <string>
#include <vector>

namespace loom::registry {

// One input line for the thing as it is now.
std::string env_input(const std::string& name);
std::string file_input(const std::string& path);
std::string dir_input(const std::string& path);

// What every probe depends on, whatever the plugin does: the dynamic
// linker's search (LD_LIBRARY_PATH, LD_PRELOAD, /etc/ld.so.cache).
std::vector<std::string> base_inputs();

// The first line of `inputs` whose thing has changed since (as "env X"
// or "file /path" with the old and new state), or "" when all hold.
std::string changed_input(const std::vector<std::string>& inputs);

// Paths whose state is not worth recording (/proc, /sys, /dev: they
// change all the time and say nothing about an installed driver).
bool volatile_path(const std::string& path);

// Paths of the shared objects mapped in this process now.
std::vector<std::string> loaded_objects();

}  // namespace loom::registry
