// WordPiece ("bert") tokenizer: normalisation and word splitting, greedy
// longest match with the whole word unknown when any piece is missing, BERT's
// special-token defaults, and GGUF loading. The real-file check is
// VocabFile (vocab_test.cpp) when ggml-vocab-bert-bge.gguf is in the folder.
#include "gguf/gguf_writer.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "llm/tokenizer/tokenizer_wpm.hpp"
#include "llm/tokenizer/unicode.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loom::llm {
namespace {

using testing::GgufBuilder;
using Words = std::vector<std::string>;

const std::string kMark = "\xe2\x96\x81";  // U+2581

TEST(WpmWords, SplitsAtWhitespacePunctuationSymbolsAndIdeographs) {
  EXPECT_EQ(wpm_words("Hello, World!"), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(wpm_words("  a\t\nb  "), (Words{"a", "b"}));
  EXPECT_EQ(wpm_words("x$y+z"), (Words{"x", "$", "y", "+", "z"}));  // ASCII symbols stand alone
  EXPECT_EQ(wpm_words("x\xe2\x82\xacy"), (Words{"x\xe2\x82\xacy"}));  // the euro sign (non-ASCII symbol) does not
  EXPECT_EQ(wpm_words("ab\xe4\xb8\xad\xe6\x96\x87" "cd"), (Words{"ab", "\xe4\xb8\xad", "\xe6\x96\x87", "cd"}));
  EXPECT_EQ(wpm_words("don't"), (Words{"don", "'", "t"}));
  EXPECT_EQ(wpm_words(""), Words{});
  EXPECT_EQ(wpm_words(" \t "), Words{});
}

TEST(WpmWords, LowercasesDropsAccentsAndControls) {
  EXPECT_EQ(wpm_words("Caf\xc3\xa9 NA\xc3\x8f" "VE"), (Words{"cafe", "naive"}));  // é -> e, Ï -> i
  EXPECT_EQ(wpm_words("a\x01" "b\xe2\x80\x8b" "c"), (Words{"abc"}));             // Cc and Cf (U+200B) dropped
  EXPECT_EQ(wpm_words(std::string("a\0b", 3)), (Words{"ab"}));
  EXPECT_EQ(wpm_words("a\xff" "b"), (Words{"ab"}));                            // an invalid byte is dropped
  EXPECT_EQ(wpm_words("\xea\xb0\x80"), (Words{"\xe1\x84\x80"}));              // 가 -> its leading jamo
  EXPECT_EQ(wpm_words("\xce\x91\xce\x92"), (Words{"\xce\xb1\xce\xb2"}));      // Greek ΑΒ -> αβ
  EXPECT_EQ(unicode::nfd_first(0xE9), 0x65u);
  EXPECT_EQ(unicode::nfd_first(0x41), 0x41u);
  EXPECT_EQ(unicode::to_lower(0x130), 0x69u);  // İ lowercases to i + a combining dot; the first code point
  EXPECT_EQ(unicode::to_lower(0x10400), 0x10428u);
}

// [PAD] [UNK] [CLS] [SEP] [MASK] and a few pieces; ids are positions.
std::vector<std::string> toy_tokens() {
  return {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", kMark + "hello", kMark + "un", "aff", "able",
          kMark + ",", kMark + "una", "ffable", kMark + "world", "s", kMark + "!", "xyz"};
}
std::vector<int32_t> toy_types() { return {3, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}; }

std::vector<uint8_t> toy_gguf(bool with_keys) {
  GgufBuilder b;
  b.kv_str("tokenizer.ggml.model", "bert");
  b.kv_arr_str("tokenizer.ggml.tokens", toy_tokens());
  b.kv_arr("tokenizer.ggml.token_type", testing::kI32, toy_types());
  if (with_keys) {
    b.kv("tokenizer.ggml.bos_token_id", testing::kU32, uint32_t{2});
    b.kv("tokenizer.ggml.unknown_token_id", testing::kU32, uint32_t{1});
    b.kv("tokenizer.ggml.seperator_token_id", testing::kU32, uint32_t{3});
    b.kv("tokenizer.ggml.padding_token_id", testing::kU32, uint32_t{0});
  }
  return b.build();
}

StatusOr<Tokenizer> load(const std::vector<uint8_t>& image) {
  auto f = GgufFile::parse(image.data(), image.size(), "toy-bert.gguf");
  if (!f.ok()) return f.status();
  return Tokenizer::from_gguf(*f);
}

using Ids = std::vector<TokenId>;

TEST(WpmTokenizer, GreedyLongestMatchAndUnknownWords) {
  auto t = load(toy_gguf(true));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->model_name(), "bert");
  // "▁una" is the longest first piece; "ffable" follows (no backtracking needed).
  EXPECT_EQ(t->encode("Unaffable", false), (Ids{10, 11}));
  // "▁hello" then "s"; "," is its own word "▁,".
  EXPECT_EQ(t->encode("hellos, world!", false), (Ids{5, 13, 9, 12, 14}));
  // "▁hello" matches but "z" does not: the whole word is [UNK], its pieces dropped.
  EXPECT_EQ(t->encode("helloz world", false), (Ids{1, 12}));
  // Greedy, not optimal: "▁una" then nothing matches "ffs", although
  // "▁un" "aff" "s" would cover the word.
  EXPECT_EQ(t->encode("unaffs", false), (Ids{1}));
  EXPECT_EQ(t->encode("unaable", false), (Ids{10, 8}));
  // A piece that never starts a word: "xyz" alone is "▁xyz", not in the vocab.
  EXPECT_EQ(t->encode("xyz", false), (Ids{1}));
  EXPECT_EQ(t->encode("", false), Ids{});
}

TEST(WpmTokenizer, PromptsGetClsAndSepAndSpecialsParse) {
  auto t = load(toy_gguf(true));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->encode_prompt("hello"), (Ids{2, 5, 3}));
  EXPECT_EQ(t->encode("[CLS] hello [MASK]", false, /*parse_special=*/true), (Ids{2, 5, 4}));
  // Without parse_special "[MASK]" is text: "[" and "]" are words, "mask" unknown.
  EXPECT_EQ(t->encode("[MASK]", false, /*parse_special=*/false), (Ids{1, 1, 1}));
}

TEST(WpmTokenizer, BertDefaultsWhenTheFileNamesNoIds) {
  // BERT's layout: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103.
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int i = 0; i < 110; ++i) {
    tokens.push_back(kMark + "w" + std::to_string(i));
    types.push_back(1);
  }
  const std::pair<int, const char*> special[] = {{0, "[PAD]"}, {100, "[UNK]"}, {101, "[CLS]"}, {102, "[SEP]"}, {103, "[MASK]"}};
  for (const auto& [id, text] : special) {
    tokens[static_cast<size_t>(id)] = text;
    types[static_cast<size_t>(id)] = id == 100 ? 2 : 3;
  }
  GgufBuilder b;
  b.kv_str("tokenizer.ggml.model", "bert");
  b.kv_arr_str("tokenizer.ggml.tokens", tokens);
  b.kv_arr("tokenizer.ggml.token_type", testing::kI32, types);
  auto t = load(b.build());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->encode_prompt("w7 nope"), (Ids{101, 7, 100, 102}));
  EXPECT_EQ(t->special().pad, 0);
}

TEST(WpmTokenizer, DecodeJoinsWordsWithSpaces) {
  auto t = load(toy_gguf(true));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto text = t->decode({2, 6, 7, 8, 9, 5, 13, 3});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "unaffable , hellos");
}

TEST(WpmTokenizer, NoUnknownTokenIsALoadError) {
  GgufBuilder b;
  b.kv_str("tokenizer.ggml.model", "bert");
  b.kv_arr_str("tokenizer.ggml.tokens", {kMark + "a"});
  auto t = load(b.build());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("needs an unknown token"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace loom::llm
