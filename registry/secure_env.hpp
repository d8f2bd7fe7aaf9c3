// Environment reads for settings that can load code or change where code is
// searched (LOOM_PLUGIN_PATH, LOOM_CACHE_DIR, LOOM_PLUGIN_PROBE, ...): under
// secure execution (a setuid/setgid process, AT_SECURE) they read as unset,
// so a user cannot make a privileged process load their code. Internal to
// libloom.
#pragma once

namespace loom::registry {

// Whether the process runs under secure execution (getauxval(AT_SECURE)).
bool secure_execution();
// secure_getenv: nullptr under secure execution.
const char* loom_getenv(const char* name);

}  // namespace loom::registry
