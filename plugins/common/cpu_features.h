// What the x86-64 CPU and the OS let a plugin variant run: CPUID feature
// bits and, through XGETBV, whether the OS saves the AVX / AVX-512 register
// state. Baseline code only (no instruction the check guards), so a
// variant's score can call it anywhere. All false on other architectures.
#pragma once

namespace loom::common {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false, avx512vnni = false;
  bool avx512bf16 = false, avxvnni = false;
  bool os_avx = false;     // XCR0: SSE and AVX state
  bool os_avx512 = false;  // XCR0: opmask and both ZMM halves as well
  // AMD before family 26 (Zen 4): 512-bit operations run as two 256-bit
  // halves. A kernel whose 512-bit form measured slower there keeps its
  // 256-bit form on such a CPU.
  bool split_avx512 = false;
  // The x86-64-v3 set the cpu-avx2 variant needs (AVX2, FMA, F16C, OS AVX).
  bool runs_avx2() const { return os_avx && avx2 && fma && f16c; }
  // What the cpu-avx512 variant needs (F, BW, DQ, VL, VNNI, OS AVX-512).
  bool runs_avx512() const {
    return runs_avx2() && os_avx512 && avx512f && avx512bw && avx512dq && avx512vl && avx512vnni;
  }
};

// Read once per process. LOOM_CPU_MASK (comma list of "avx2", "avx512")
// makes the named groups read as absent — a test aid for the variant
// checks on machines that have them.
const CpuFeatures& cpu_features();

}  // namespace loom::common
