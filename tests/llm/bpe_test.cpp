// Byte-level BPE and the rules every tokenizer shares: toy vocabularies for
// merge order, ignore_merges, special tokens and byte round trips; GGUF
// images built here for the file flags and the load errors; the real
// llama 3 / Qwen2 / GPT-2 vocabularies (skipped when absent) for special
// tokens, end-of-generation ids and round trips of arbitrary bytes.
#include "gguf/gguf_writer.hpp"
#include "llm/tokenizer/byte_level.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "llm_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <random>

namespace loom::llm {
namespace {

using testing::GgufBuilder;

// The byte-level spelling of raw text ("a b" -> "aĠb").
std::string bl(std::string_view raw) {
  std::string out;
  byte_level::encode(raw, &out);
  return out;
}

struct ToyBpe {
  std::vector<std::string> tokens;  // the 256 byte characters first, so byte b is id b
  std::vector<int32_t> types;
  std::vector<std::string> merges;

  ToyBpe() {
    for (int b = 0; b < 256; ++b) {
      tokens.push_back(bl(std::string(1, static_cast<char>(b))));
      types.push_back(1);
    }
  }
  // A merged token and its merge ("left right" in byte-level spelling).
  ToyBpe& merge(const std::string& left, const std::string& right) {
    merges.push_back(bl(left) + " " + bl(right));
    return token(bl(left + right));
  }
  ToyBpe& token(const std::string& text, int32_t type = 1) {
    tokens.push_back(text);
    types.push_back(type);
    return *this;
  }
  Tokenizer build(const char* pre = "gpt-2", SpecialTokens sp = bpe_specials()) const {
    std::vector<std::string_view> views(merges.begin(), merges.end());
    auto t = Tokenizer::from_bpe_vocab(tokens, types, views, pre, sp, "toy");
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return std::move(t).value();
  }
  static SpecialTokens bpe_specials() {
    SpecialTokens sp;
    sp.bos = sp.eos = sp.unk = kNoToken;
    sp.add_bos = false;
    return sp;
  }
  TokenId id(const std::string& text) const {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] == text) return static_cast<TokenId>(i);
    }
    return kNoToken;
  }
};

std::vector<std::string> texts(const Tokenizer& t, const std::vector<TokenId>& ids) {
  std::vector<std::string> out;
  for (TokenId id : ids) out.push_back(t.token_text(id));
  return out;
}
using Texts = std::vector<std::string>;

TEST(BpeToy, MergesApplyLowestRankFirst) {
  // b+c (rank 0) before a+b (rank 1); then a+bc (rank 2).
  Tokenizer t = ToyBpe().merge("b", "c").merge("a", "b").merge("a", "bc").build();
  EXPECT_EQ(texts(t, t.encode("abc", false)), (Texts{"abc"}));
  // With a+b ranked first, "ab" forms and "ab"+"c" has no merge.
  Tokenizer u = ToyBpe().merge("a", "b").merge("b", "c").merge("a", "bc").build();
  EXPECT_EQ(texts(u, u.encode("abc", false)), (Texts{"ab", "c"}));
}

TEST(BpeToy, EqualRanksGoLeftmost) {
  Tokenizer t = ToyBpe().merge("a", "a").build();
  EXPECT_EQ(texts(t, t.encode("aaa", false)), (Texts{"aa", "a"}));
  EXPECT_EQ(texts(t, t.encode("aaaa", false)), (Texts{"aa", "aa"}));
}

TEST(BpeToy, PiecesNeverMergeAcrossThePreTokenizer) {
  // gpt-2 cuts " a" and " a" apart: "a a" across the space never forms.
  Tokenizer t = ToyBpe().merge(" ", "a").merge("a", " ").build();
  EXPECT_EQ(texts(t, t.encode("a a", false)), (Texts{"a", bl(" a")}));
  EXPECT_EQ(*t.decode(t.encode("a a", false)), "a a");
}

TEST(BpeToy, IgnoreMergesTakesWholeTokens) {
  // "abc" is a token but no merge path leads to it.
  ToyBpe v;
  v.merge("a", "b").token("abc");
  Tokenizer gpt2 = v.build("gpt-2");
  EXPECT_EQ(texts(gpt2, gpt2.encode("abc", false)), (Texts{"ab", "c"}));
  Tokenizer llama3 = v.build("llama-bpe");
  EXPECT_EQ(texts(llama3, llama3.encode("abc", false)), (Texts{"abc"}));
}

TEST(BpeToy, AnyBytesRoundTrip) {
  Tokenizer t = ToyBpe().merge("a", "b").merge(" ", "ab").build("llama-bpe");
  std::mt19937 rng(7);
  for (int iter = 0; iter < 500; ++iter) {
    std::string s;
    const int n = static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(rng() % 4 == 0 ? 'a' + rng() % 3 : rng() % 256));
    auto back = t.decode(t.encode(s, false, false));
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(*back, s) << "iteration " << iter;
  }
}

TEST(BpeToy, SpecialTokensAreKeptWholeLongestFirst) {
  ToyBpe v;
  v.token("<|x|>", 3).token("<|x|>y", 4).token("<|end|>", 3);
  const TokenId x = v.id("<|x|>"), xy = v.id("<|x|>y"), end = v.id("<|end|>");
  Tokenizer t = v.build();
  EXPECT_EQ(t.encode("q<|x|>yz<|x|><|end|>", false), (std::vector<TokenId>{'q', xy, 'z', x, end}));
  // Without parse_special only user-defined tokens are cut out.
  const std::vector<TokenId> plain = t.encode("<|x|>y<|end|>", false, false);
  EXPECT_EQ(plain.front(), xy);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), end), 0);
  // Control tokens print nothing, user-defined ones their text.
  EXPECT_EQ(*t.decode({'a', x, xy, end}), "a<|x|>y");
  EXPECT_EQ(*t.token_to_piece(end), "");
  EXPECT_EQ(*t.token_to_piece(end, /*render_special=*/true), "<|end|>");
}

TEST(BpeToy, EndOfGenerationIds) {
  ToyBpe v;
  v.token("<|endoftext|>", 3).token("<|im_start|>", 3).token("<|im_end|>", 3);
  SpecialTokens sp = ToyBpe::bpe_specials();
  sp.eos = v.id("<|endoftext|>");
  Tokenizer t = v.build("qwen2", sp);
  EXPECT_EQ(t.special().eot, v.id("<|im_end|>"));  // found by text
  EXPECT_TRUE(t.is_eog(v.id("<|im_end|>")));
  EXPECT_TRUE(t.is_eog(v.id("<|endoftext|>")));
  EXPECT_FALSE(t.is_eog(v.id("<|im_start|>")));
  EXPECT_FALSE(t.is_eog('a'));
  EXPECT_FALSE(t.is_eog(kNoToken));
}

TEST(BpeToy, BadInputs) {
  ToyBpe v;
  std::vector<std::string_view> merges = {"ab"};
  auto s = Tokenizer::from_bpe_vocab(v.tokens, v.types, merges, "gpt-2", ToyBpe::bpe_specials(), "v").status();
  EXPECT_NE(s.message().find("merge 0 is 'ab', expected 'left right'"), std::string::npos) << s.message();
  s = Tokenizer::from_bpe_vocab(v.tokens, v.types, {}, "gpt-5", ToyBpe::bpe_specials(), "v").status();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("[tokenizer.load] v: unknown BPE pre-tokenizer 'gpt-5'"), std::string::npos)
      << s.message();
}

// ------------------------------------------------------ GGUF metadata

// A vocabulary-only GGUF image of the toy BPE vocab (plus extra keys).
std::vector<uint8_t> toy_gguf(const ToyBpe& v, const char* pre, const std::function<void(GgufBuilder&)>& extra = {}) {
  GgufBuilder b;
  b.kv_str("general.architecture", "llama");
  b.kv_str("tokenizer.ggml.model", "gpt2");
  if (pre) b.kv_str("tokenizer.ggml.pre", pre);
  b.kv_arr_str("tokenizer.ggml.tokens", v.tokens);
  b.kv_arr("tokenizer.ggml.token_type", testing::kI32, v.types);
  b.kv_arr_str("tokenizer.ggml.merges", v.merges);
  if (extra) extra(b);
  return b.build();
}

StatusOr<Tokenizer> load(const std::vector<uint8_t>& image) {
  auto f = GgufFile::parse(image.data(), image.size(), "toy.gguf");
  if (!f.ok()) return f.status();
  return Tokenizer::from_gguf(*f);
}

TEST(BpeGguf, BosDefaultsFollowThePreTokenizerUnlessTheFileSays) {
  ToyBpe v;
  v.merge("a", "b").token("<|begin_of_text|>", 3);
  const TokenId bos = v.id("<|begin_of_text|>");
  auto with_bos = [&](GgufBuilder& b) {
    b.kv("tokenizer.ggml.bos_token_id", testing::kU32, static_cast<uint32_t>(bos));
  };
  auto llama3 = load(toy_gguf(v, "llama-bpe", with_bos));
  ASSERT_TRUE(llama3.ok()) << llama3.status().to_string();
  EXPECT_TRUE(llama3->special().add_bos);
  EXPECT_EQ(llama3->encode_prompt("ab"), (std::vector<TokenId>{bos, v.id("ab")}));
  EXPECT_EQ(llama3->model_name(), "gpt2");
  EXPECT_EQ(llama3->pre_name(), "llama-bpe");
  auto qwen = load(toy_gguf(v, "qwen2", with_bos));
  ASSERT_TRUE(qwen.ok());
  EXPECT_FALSE(qwen->special().add_bos);
  EXPECT_EQ(qwen->encode_prompt("ab"), (std::vector<TokenId>{v.id("ab")}));
  auto off = load(toy_gguf(v, "llama-bpe", [&](GgufBuilder& b) {
    with_bos(b);
    b.kv("tokenizer.ggml.add_bos_token", testing::kBool, uint8_t{0});
    b.kv("tokenizer.ggml.add_eos_token", testing::kBool, uint8_t{1});
    b.kv("tokenizer.ggml.eos_token_id", testing::kU32, static_cast<uint32_t>('z'));
  }));
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_FALSE(off->special().add_bos);
  EXPECT_EQ(off->encode_prompt("ab"), (std::vector<TokenId>{v.id("ab"), 'z'}));
}

TEST(BpeGguf, MissingPreMeansDefault) {
  auto t = load(toy_gguf(ToyBpe(), nullptr));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->pre_name(), "default");
}

TEST(BpeGguf, Glm4HasNoBosWhateverTheFileSays) {
  // llama.cpp drops GLM-4's BOS id (its template writes [gMASK]<sop>).
  ToyBpe v;
  v.merge("a", "b").token("<|endoftext|>", 3);
  const TokenId bos = v.id("<|endoftext|>");
  for (const char* pre : {"glm4", "chatglm-bpe"}) {
    auto t = load(toy_gguf(v, pre, [&](GgufBuilder& b) {
      b.kv("tokenizer.ggml.bos_token_id", testing::kU32, static_cast<uint32_t>(bos));
      b.kv("tokenizer.ggml.add_bos_token", testing::kBool, uint8_t(1));
    }));
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->encode_prompt("ab"), (std::vector<TokenId>{v.id("ab")})) << pre;
  }
}

TEST(BpeGguf, LoadErrorsNameTheProblem) {
  auto unknown = load(toy_gguf(ToyBpe(), "frobnicate"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnimplemented);
  const std::string m = unknown.status().message();
  EXPECT_NE(m.find("[tokenizer.load] toy.gguf: unknown BPE pre-tokenizer 'frobnicate' (tokenizer.ggml.pre)"),
            std::string::npos)
      << m;
  for (const char* name : {"llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder",
                           "refact", "command-r", "mpt", "default"}) {
    EXPECT_NE(m.find(name), std::string::npos) << name;
  }

  GgufBuilder t5;
  t5.kv_str("tokenizer.ggml.model", "t5");
  auto b = load(t5.build());
  EXPECT_EQ(b.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(b.status().message().find("tokenizer model 't5' is not supported"), std::string::npos)
      << b.status().message();

  GgufBuilder no_merges;
  no_merges.kv_str("tokenizer.ggml.model", "gpt2").kv_str("tokenizer.ggml.pre", "gpt-2");
  no_merges.kv_arr_str("tokenizer.ggml.tokens", {"a"});
  EXPECT_NE(load(no_merges.build()).status().message().find("needs tokenizer.ggml.merges"), std::string::npos);

  GgufBuilder none;
  none.kv_str("general.architecture", "llama");
  EXPECT_NE(load(none.build()).status().message().find("the file has no tokenizer"), std::string::npos);
}

TEST(SpmGguf, Phi3SpecialTokensSwallowTheWhitespaceAfterThem) {
  // Phi-3's added tokens have rstrip in its tokenizer.json; GGUF keeps no
  // such field, so the rule is keyed on the model name (as llama.cpp does).
  const std::string sp = "\xe2\x96\x81";
  auto image = [&](const char* name) {
    GgufBuilder b;
    b.kv_str("general.name", name);
    b.kv_str("tokenizer.ggml.model", "llama");
    b.kv_arr_str("tokenizer.ggml.tokens",
                 {"<unk>", "<s>", "</s>", "<|user|>", sp + "hi", sp, "h", "i", "\n", sp + "h"});
    b.kv_arr("tokenizer.ggml.token_type", testing::kI32, std::vector<int32_t>{2, 3, 3, 3, 1, 1, 1, 1, 1, 1});
    return b.build();
  };
  auto phi = load(image("Phi3"));
  ASSERT_TRUE(phi.ok()) << phi.status().to_string();
  EXPECT_EQ(phi->encode("<|user|>\n hi", false), (std::vector<TokenId>{3, 4}));
  auto other = load(image("llama"));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->encode("<|user|>hi", false), (std::vector<TokenId>{3, 4}));  // space prefix after a special
  EXPECT_EQ(other->encode("<|user|>\nhi", false), (std::vector<TokenId>{3, 5, 8, 6, 7}));
  EXPECT_EQ(*other->decode(other->encode("<|user|>hi<|user|> hi", false)), "hi hi");
}

// ------------------------------------------------------ real vocabularies

std::unique_ptr<Tokenizer> real(const std::string& name, std::string* skip) {
  const std::string path = test::models_dir() + "/vocab/ggml-vocab-" + name + ".gguf";
  if (!std::ifstream(path).good()) {
    *skip = path + " not found (set LOOM_MODELS_DIR to the models folder holding vocab/)";
    return nullptr;
  }
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return nullptr;
  auto t = Tokenizer::from_gguf(*f);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::make_unique<Tokenizer>(std::move(t).value()) : nullptr;
}

#define LOAD_OR_SKIP(var, name)              \
  std::string skip_##var;                    \
  auto var = real(name, &skip_##var);        \
  if (!skip_##var.empty()) GTEST_SKIP() << skip_##var; \
  ASSERT_TRUE(var)

TEST(BpeReal, Llama3SpecialTokensAndFlags) {
  LOAD_OR_SKIP(t, "llama-bpe");
  EXPECT_EQ(t->special().bos, 128000);
  EXPECT_EQ(t->special().eos, 128001);
  EXPECT_EQ(t->special().eot, 128009);  // <|eot_id|>, by text
  EXPECT_EQ(t->special().eom, kNoToken);  // llama 3.0: 128008 is still a reserved token
  EXPECT_TRUE(t->special().add_bos);      // llama-bpe's default: the file has no add_bos_token
  for (TokenId id : {128001, 128009}) EXPECT_TRUE(t->is_eog(id)) << id;
  EXPECT_FALSE(t->is_eog(128008));
  EXPECT_FALSE(t->is_eog(128000));
  EXPECT_EQ(t->encode("<|begin_of_text|>Hello<|eot_id|>", false), (std::vector<TokenId>{128000, 9906, 128009}));
  EXPECT_EQ(t->encode_prompt("Hello world"), (std::vector<TokenId>{128000, 9906, 1917}));
  const std::vector<TokenId> plain = t->encode("<|eot_id|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(*t->decode(plain), "<|eot_id|>");
  EXPECT_EQ(*t->decode({128000, 9906, 1917, 128009}), "Hello world");  // control tokens print nothing
}

TEST(BpeReal, Qwen2AndGpt2SpecialTokens) {
  LOAD_OR_SKIP(q, "qwen2");
  EXPECT_FALSE(q->special().add_bos);
  EXPECT_EQ(q->special().eot, 151645);  // <|im_end|>
  EXPECT_TRUE(q->is_eog(151643));       // <|endoftext|>
  EXPECT_EQ(q->encode("<|im_start|>user\nhi<|im_end|>", false),
            (std::vector<TokenId>{151644, 872, 198, 6023, 151645}));
  LOAD_OR_SKIP(g, "gpt-2");
  EXPECT_EQ(g->special().bos, 50256);
  EXPECT_EQ(g->special().eot, 50256);
  EXPECT_FALSE(g->special().add_bos);
  EXPECT_EQ(g->encode("a<|endoftext|>", false), (std::vector<TokenId>{64, 50256}));
}

// decode(encode(s)) == s for arbitrary bytes: ASCII, whitespace of every
// kind, multi-byte characters, emoji sequences and bytes that are not UTF-8.
TEST(BpeReal, RandomRoundTrips) {
  const std::vector<std::string> pool = {
      "a", "Hello", " world", "'s", "'LL", " ", "  ", "\t", "\n", "\r\n", "\xc2\xa0", "\xe3\x80\x80", "0", "123",
      "4567", "!", "...", "<|", "|>", "\xc3\xa9", "\xd0\x9f\xd1\x80\xd0\xb8", "\xe4\xb8\xad\xe6\x96\x87",
      "\xf0\x9f\xa6\x99", "\xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f", "\xe0\xa4\xa8\xe0\xa4\xae",
      "\x80", "\xff", "\xc3", "\xe4\xb8", "\xf0\x9f", std::string(1, '\0'), "\x1c", "\xef\xbb\xbf"};
  for (const char* name : {"llama-bpe", "qwen2", "gpt-2"}) {
    LOAD_OR_SKIP(t, name);
    std::mt19937 rng(20240611);
    for (int iter = 0; iter < 1000; ++iter) {
      std::string s;
      const int n = static_cast<int>(rng() % 24);
      for (int i = 0; i < n; ++i) s += pool[rng() % pool.size()];
      const auto ids = t->encode(s, rng() % 2 == 0, /*parse_special=*/false);
      for (TokenId id : ids) ASSERT_TRUE(id >= 0 && id < t->n_vocab());
      auto back = t->decode(ids);
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      ASSERT_EQ(*back, s) << name << " iteration " << iter;
    }
  }
}

}  // namespace
}  // namespace loom::llm
