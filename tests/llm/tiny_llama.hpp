// Test helper: a tiny llama GGUF (n_embd 4, 1 layer, 2 heads, 1 kv head,
// n_ff 8, vocab 6, context 16) written with the independent GgufBuilder,
// with knobs for the loader's error paths: any metadata key overridden, a
// tensor left out or misshapen, a tokenizer of any size, a weight filled
// with one value (NaN).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_writer.hpp"

namespace loom::test {

struct TinyLlama {
  std::string arch = "llama";
  // <arch>.<key> -> value; written as uint32, or uint64 when larger.
  std::map<std::string, uint64_t> keys = {{"embedding_length", 4},   {"block_count", 1},
                                          {"attention.head_count", 2}, {"attention.head_count_kv", 1},
                                          {"feed_forward_length", 8}, {"context_length", 16}};
  std::string skip;       // tensor left out
  std::string bad_shape;  // tensor whose ne[0] is one too many
  int64_t n_vocab = 6;    // rows of token_embd.weight
  // Tokens of a llama (SPM) tokenizer in the file; -1: no tokenizer.
  // Ids 0..2 are <unk>, <s>, </s>; then "▁a", "a", "b", "c", ... .
  int64_t n_tokens = -1;
  std::string tokenizer_model = "llama";  // tokenizer.ggml.model
  std::string fill_tensor;  // every element of this tensor is fill_value
  float fill_value = 0.0f;
  uint32_t eos_id = 2;  // tokenizer.ggml.eos_token_id

  loom::testing::GgufBuilder build() const {
    using loom::testing::GgufBuilder;
    GgufBuilder b;
    b.kv_str("general.architecture", arch);
    for (const auto& [k, v] : keys) {
      if (v > UINT32_MAX) {
        b.kv(arch + "." + k, loom::testing::kU64, v);
      } else {
        b.kv(arch + "." + k, loom::testing::kU32, static_cast<uint32_t>(v));
      }
    }
    if (n_tokens >= 0) add_tokenizer(b);
    const auto nv = static_cast<uint64_t>(n_vocab);
    const std::vector<std::pair<std::string, std::vector<uint64_t>>> tensors = {
        {"token_embd.weight", {4, nv}},   {"output_norm.weight", {4}},       {"blk.0.attn_norm.weight", {4}},
        {"blk.0.attn_q.weight", {4, 4}},  {"blk.0.attn_k.weight", {4, 2}},   {"blk.0.attn_v.weight", {4, 2}},
        {"blk.0.attn_output.weight", {4, 4}}, {"blk.0.ffn_norm.weight", {4}}, {"blk.0.ffn_gate.weight", {4, 8}},
        {"blk.0.ffn_up.weight", {4, 8}},  {"blk.0.ffn_down.weight", {8, 4}},
    };
    for (auto [name, dims] : tensors) {
      if (name == skip) continue;
      if (name == bad_shape) dims[0] += 1;
      uint64_t n = 1;
      for (uint64_t d : dims) n *= d;
      // Norm weights 1, matrices a small pattern: finite, non-trivial logits.
      std::vector<float> v(n);
      const bool norm = name.find("norm") != std::string::npos;
      for (uint64_t i = 0; i < n; ++i) v[i] = norm ? 1.0f : 0.05f * static_cast<float>(static_cast<int>(i % 7) - 3);
      if (name == fill_tensor) v.assign(n, fill_value);
      std::vector<uint8_t> bytes(n * 4);
      std::memcpy(bytes.data(), v.data(), bytes.size());
      b.tensor(name, dims, 0 /* f32 */, std::move(bytes));
    }
    return b;
  }

  // Writes the model to path; false on an I/O error.
  bool write(const std::string& path) const {
    const std::vector<uint8_t> bytes = build().build();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(f);
  }

  // The tokenizer's keys (n_tokens of them); tiny_arch.hpp's models use it too.
  void add_tokenizer(loom::testing::GgufBuilder& b) const {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "\xe2\x96\x81" "a"};
    std::vector<int32_t> types = {2, 3, 3, 1};
    for (int64_t i = static_cast<int64_t>(tokens.size()); i < n_tokens; ++i) {
      // "a".."z", then "a+".."z+", ...: distinct texts for any count.
      const int64_t k = i - 4;
      tokens.push_back(std::string(1, static_cast<char>('a' + k % 26)) + std::string(static_cast<size_t>(k / 26), '+'));
      types.push_back(1);
    }
    tokens.resize(static_cast<size_t>(n_tokens));
    types.resize(static_cast<size_t>(n_tokens));
    b.kv_str("tokenizer.ggml.model", tokenizer_model);
    b.kv_arr_str("tokenizer.ggml.tokens", tokens);
    b.kv_arr("tokenizer.ggml.scores", loom::testing::kF32, std::vector<float>(tokens.size(), 0.0f));
    b.kv_arr("tokenizer.ggml.token_type", loom::testing::kI32, types);
    b.kv("tokenizer.ggml.bos_token_id", loom::testing::kU32, uint32_t{1});
    b.kv("tokenizer.ggml.eos_token_id", loom::testing::kU32, eos_id);
  }
};

}  // namespace loom::test
