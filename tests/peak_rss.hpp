// Test helper: the peak resident memory of this process, to show that a
// file's claims cost nothing before their bytes are read. ctest runs each
// test in its own process, so a difference over one test is meaningful there.
#pragma once

#include <sys/resource.h>

#include <cstddef>

namespace loom::test {

inline size_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<size_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace loom::test
