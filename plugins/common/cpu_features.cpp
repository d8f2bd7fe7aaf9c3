#include "common/cpu_features.h"

#include <cstdint>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace loom::common {
namespace {

#if defined(__x86_64__) || defined(__i386__)
bool bit(uint32_t v, int b) { return ((v >> b) & 1u) != 0; }

uint64_t xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures read_features() {
  CpuFeatures f;
  uint32_t a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  // Family: the base field, plus the extended field when the base is 15.
  const uint32_t family = ((a >> 8) & 0xF) == 0xF ? 0xF + ((a >> 20) & 0xFF) : (a >> 8) & 0xF;
  f.split_avx512 = amd && family < 0x1A;
  const bool osxsave = bit(c, 27);
  const bool avx = bit(c, 28);
  f.fma = bit(c, 12);
  f.f16c = bit(c, 29);
  if (osxsave && avx) {
    const uint64_t xcr0 = xgetbv0();
    f.os_avx = (xcr0 & 0x6) == 0x6;
    f.os_avx512 = f.os_avx && (xcr0 & 0xE0) == 0xE0;
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = bit(b, 5);
    f.avx512f = bit(b, 16);
    f.avx512dq = bit(b, 17);
    f.avx512bw = bit(b, 30);
    f.avx512vl = bit(b, 31);
    f.avx512vnni = bit(c, 11);
    const uint32_t max_sub = a;
    if (max_sub >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) {
      f.avxvnni = bit(a, 4);
      f.avx512bf16 = bit(a, 5);
    }
  }
  return f;
}
#else
CpuFeatures read_features() { return {}; }
#endif

// LOOM_CPU_MASK: the named groups read as absent.
void apply_mask(CpuFeatures* f) {
  const char* env = std::getenv("LOOM_CPU_MASK");
  if (env == nullptr) return;
  const std::string mask = std::string(",") + env + ",";
  if (mask.find(",avx512,") != std::string::npos) f->os_avx512 = f->avx512f = f->avx512vnni = false;
  if (mask.find(",avx2,") != std::string::npos) f->avx2 = false;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f = read_features();
    apply_mask(&f);
    return f;
  }();
  return features;
}

}  // namespace loom::common
