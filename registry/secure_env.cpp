#include "registry/secure_env.hpp"

#include <sys/auxv.h>

#include <cstdlib>

namespace loom::registry {

bool secure_execution() { return getauxval(AT_SECURE) != 0; }

const char* loom_getenv(const char* name) { return secure_getenv(name); }

}  // namespace loom::registry
