// The real model: ../shared/models/stories260K.gguf (LOOM_MODELS_DIR overrides
// the folder). Skipped with a message when the file is absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "loom/runtime/gguf.hpp"

#ifndef LOOM_MODELS_DIR_DEFAULT
#define LOOM_MODELS_DIR_DEFAULT "../shared/models"
#endif

namespace loom {
namespace {

std::string model_path(const char* file) {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env && *env ? env : LOOM_MODELS_DIR_DEFAULT) + "/" + file;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

TEST(GgufModel, Stories260K) {
  const std::string path = model_path("stories260K.gguf");
  if (!exists(path)) GTEST_SKIP() << path << " not found (set LOOM_MODELS_DIR to the models folder)";
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();

  EXPECT_EQ(*f->get_str("general.architecture"), "llama");
  EXPECT_EQ(*f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*f->get_int("llama.block_count"), 5);
  EXPECT_EQ(*f->get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(*f->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*f->get_str("tokenizer.ggml.model"), "llama");
  auto tokens = f->get_arr_str("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
  EXPECT_EQ(tokens->size(), 512u);
  EXPECT_EQ(f->get_arr_f32("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(f->get_arr_int("tokenizer.ggml.token_type")->size(), 512u);

  // 5 layers x 9 tensors + token embedding, output norm, output.
  EXPECT_EQ(f->tensors().size(), 48u);
  const GgufTensorInfo* embd = f->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, static_cast<uint32_t>(LOOM_TYPE_F32));
  EXPECT_EQ(embd->ne[0], 64);
  EXPECT_EQ(embd->ne[1], 512);
  const GgufTensorInfo* wk = f->find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(wk, nullptr);
  EXPECT_EQ(wk->ne[0], 64);
  EXPECT_EQ(wk->ne[1], 32);  // n_head_kv * head_dim = 4 * 8
  const GgufTensorInfo* ffn = f->find_tensor("blk.4.ffn_up.weight");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(ffn->ne[0], 64);
  const GgufTensorInfo* norm = f->find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->n_dims, 1u);
  EXPECT_EQ(norm->nbytes, 64u * 4);

  // Listing for the report (LOOM_GGUF_DUMP=1).
  if (std::getenv("LOOM_GGUF_DUMP")) {
    std::printf("version %u, alignment %u, data at %llu, %zu bytes\n", f->version(), f->alignment(),
                static_cast<unsigned long long>(f->data_offset()), f->image_size());
    for (const GgufKv& kv : f->kvs()) {
      std::printf("  kv %.*s : %s", static_cast<int>(kv.key.size()), kv.key.data(), gguf_type_name(kv.value.type()));
      if (kv.value.type() == GgufType::kArray) {
        std::printf(" of %llu %s", static_cast<unsigned long long>(kv.value.size()),
                    gguf_type_name(kv.value.elem_type()));
      } else if (kv.value.type() == GgufType::kString) {
        std::printf(" = %.*s", static_cast<int>(kv.value.as_str().size()), kv.value.as_str().data());
      } else if (kv.value.type() == GgufType::kFloat32 || kv.value.type() == GgufType::kFloat64) {
        std::printf(" = %g", kv.value.as_f64());
      } else {
        auto v = f->get_int(kv.key);
        if (v.ok()) std::printf(" = %lld", static_cast<long long>(*v));
      }
      std::printf("\n");
    }
    for (const GgufTensorInfo& t : f->tensors()) {
      std::printf("  tensor %-28s %-5s [%lld, %lld, %lld, %lld] offset %llu bytes %llu\n", t.name.c_str(),
                  gguf_tensor_type_name(t.type), static_cast<long long>(t.ne[0]), static_cast<long long>(t.ne[1]),
                  static_cast<long long>(t.ne[2]), static_cast<long long>(t.ne[3]),
                  static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(t.nbytes));
    }
  }
}

}  // namespace
}  // namespace loom
