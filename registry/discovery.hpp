// Finding candidate plugin files. Search order: Options::paths (folders or
// files) -> LOOM_PLUGIN_PATH (colon-separated) -> the folder of libloom and
// its loom/ subfolder (an installed prefix: <libdir>/loom) ->
// the install folder. Files are named libloom-<plugin>[-<variant>].so; the
// first file of a given name wins and later ones are recorded as skipped
// duplicates. A folder reached twice (same canonical path) is searched once.
// Internal to libloom.
#pragma once

#include <string>
#include <vector>

#include "loom/registry/registry.hpp"

namespace loom::registry {

// Split "libloom-cpu-avx512.so" into plugin "cpu" and variant "avx512".
// Returns false when the name does not follow the pattern.
bool parse_plugin_file_name(const std::string& file_name, std::string* plugin,
                            std::string* variant);

// Every candidate file in search order, as records at Stage::kFound (fate
// kFailed and an empty reason until loaded), with duplicates already marked
// skipped and files that are not regular files (a FIFO, a device) failed.
// Search-path entries that are refused (relative: they would depend on the
// current directory; LOOM_PLUGIN_PATH under secure execution) are reported
// in *warnings.
std::vector<Candidate> discover(const Options& options, std::vector<std::string>* warnings);

// Whether a candidate came from loom's own folders (the folder of libloom
// or the install folder) rather than from the application or
// LOOM_PLUGIN_PATH.
bool is_builtin_origin(const std::string& origin);

}  // namespace loom::registry
