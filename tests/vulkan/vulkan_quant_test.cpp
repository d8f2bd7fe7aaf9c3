// The quantized synth256 files through the loom binary on vulkan0 alone
// (shaders/quant.glsl: Q2_K..Q6_K, IQ4_NL and the others): the prompt's
// prefill and 8 greedy tokens print exactly what the tool's F32 twin of the
// file prints on the cpu. The shaders multiply dequantized
// f32 weights in f32, so the twin is the reference (the cpu's own run of
// the quantized file rounds activations to 8 bits and may part after a
// few tokens). Once on lavapipe's per-output kernels and once on the
// float kernels GPUs run (LOOM_VULKAN_DISABLE=rows,int8: mul_mat_vec for
// decode, the tiled mul_mat for the prompt of more than 8 tokens); the
// int8 decode GEMV, which rounds B as the cpu does, is checked against the
// cpu by vulkan_int8_test.cpp and QuantModels.VulkanInt8DecodeRoundsBAsTheCpuDoes.
#include <fstream>
#include <string>

#include "vulkan_test_util.hpp"

#ifndef LOOM_MODELS_DIR_DEFAULT
#define LOOM_MODELS_DIR_DEFAULT "../shared/models"
#endif

namespace loom::vktest {
namespace {

std::string quant_dir() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env != nullptr && *env != '\0' ? env : LOOM_MODELS_DIR_DEFAULT) + "/quant";
}

TEST(VulkanQuantFiles, Vulkan0AlonePrintsTheF32TwinsText) {
  auto reg = load_registry();
  if (reg->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg);
  int ran = 0;
  // Together the three twins cover Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_NL.
  for (const char* t : {"q2_k", "q3_k_m", "iq4_nl"}) {
    const std::string q = quant_dir() + "/synth256-" + t + ".gguf";
    const std::string twin = quant_dir() + "/synth256-" + t + ".deq-f32.gguf";
    if (!std::ifstream(q).good() || !std::ifstream(twin).good()) continue;
    ++ran;
    SCOPED_TRACE(t);
    const std::string args = " -n 8 -p \"Once upon a time there was a little dog who liked to run\" --device ";
    ProcResult ref = run_loom("run -m " + twin + args + "cpu");
    ASSERT_EQ(ref.exit_code, 0) << ref.out;
    for (const char* env : {"", "LOOM_VULKAN_DISABLE=rows,int8"}) {
      SCOPED_TRACE(env);
      ProcResult vk = run_loom("run -m " + q + args + "vulkan0", false, env);
      ASSERT_EQ(vk.exit_code, 0) << run_loom("run -m " + q + " -n 2 --device vulkan0", true, env).out;
      EXPECT_EQ(vk.out, ref.out);
    }
  }
  if (ran == 0) GTEST_SKIP() << quant_dir() << ": no synth256 file with its F32 twin (LOOM_MODELS_DIR)";
}

}  // namespace
}  // namespace loom::vktest
