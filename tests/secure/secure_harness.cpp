// A small program for the secure-execution test (tests/registry/
// secure_test.cpp): run as a setgid copy, it loads the registry with the
// environment it was given and prints what it found, one fact per line.
#include <sys/auxv.h>

#include <cstdio>

#include "loom/registry/registry.hpp"

int main() {
  std::printf("secure=%d\n", getauxval(AT_SECURE) != 0 ? 1 : 0);
  loom::registry::Options o;
  o.search_library_dir = false;  // only what the environment adds, plus the install folder
  o.search_install_dir = false;
  auto reg = loom::registry::Registry::load(o);
  for (const auto& c : reg->candidates()) {
    std::printf("candidate %s %s %s\n", c.plugin.c_str(), c.origin.c_str(), loom::registry::fate_name(c.fate));
  }
  for (const auto& w : reg->warnings()) std::printf("warning %s\n", w.c_str());
  return 0;
}
