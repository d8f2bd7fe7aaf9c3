// `loom tokenize` on the vocabulary-only GGUF files in $LOOM_MODELS_DIR/vocab
// (skipped when absent): ids as the files' published test data has them (plus
// BOS where the tokenizer adds one), the text and JSON forms, special tokens,
// byte-exact -f input, and the errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/json_test_util.hpp"
#include "cli/run_loom.hpp"
#include "gguf/gguf_writer.hpp"

namespace fs = std::filesystem;

namespace {

using loom::test::run_loom;

std::string models_dir() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return env && *env ? env : LOOM_TEST_SOURCE_DIR "/../shared/models";
}

std::string vocab(const std::string& name) { return models_dir() + "/vocab/ggml-vocab-" + name + ".gguf"; }

// Single-quoted for the shell run_loom goes through.
std::string sh(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

#define SKIP_IF_ABSENT(path) \
  if (!fs::exists(path)) GTEST_SKIP() << (path) << " not found (set LOOM_MODELS_DIR to the models folder)"

class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    char tmpl[] = "/tmp/loom-tokenize-test-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    path_ = tmpl;
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(CliTokenize, IdsAsTheVocabTestDataHasThem) {
  struct Want {
    const char* name;
    const char* ids;  // "Hello world", from the file's .out; BOS where the tokenizer adds it
  };
  for (const Want& w : {Want{"llama-bpe", "128000 9906 1917"}, Want{"qwen2", "9707 1879"}, Want{"gpt-2", "15496 995"},
                        Want{"phi-3", "1 15043 3186"}, Want{"llama-spm", "1 15043 3186"}}) {
    const std::string model = vocab(w.name);
    SKIP_IF_ABSENT(model);
    auto r = run_loom("tokenize -m " + model + " -p 'Hello world' --ids", "", false);
    EXPECT_EQ(r.exit_code, 0) << w.name;
    EXPECT_EQ(r.out, std::string(w.ids) + "\n") << w.name;
  }
}

TEST(CliTokenize, FileInputIsByteExact) {
  const std::string model = vocab("llama-bpe");
  SKIP_IF_ABSENT(model);
  // The first case of the .inp file ("ied 4 \xc2\xbd months"); the trailing
  // newline of a file is text too (Ċ, id 198).
  TempFile f("ied 4 \xc2\xbd months\n");
  auto r = run_loom("tokenize -m " + model + " -f " + f.path() + " --ids", "", false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "128000 1142 220 19 220 27154 4038 198\n");
  auto in = run_loom("tokenize -m " + model + " -f - --ids < " + f.path(), "", false);
  EXPECT_EQ(in.out, r.out);
}

TEST(CliTokenize, LinesShowIdAndEscapedPiece) {
  const std::string model = vocab("llama-bpe");
  SKIP_IF_ABSENT(model);
  auto r = run_loom("tokenize -m " + model + " -p " + sh("Hello world\n\xf0\x9f\xa6\x99"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(" 128000 '<|begin_of_text|>'\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("   9906 'Hello'\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("   1917 ' world'\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'\\n"), std::string::npos) << r.out;     // the newline, escaped
  EXPECT_NE(r.out.find("\\xf0\\x9f"), std::string::npos) << r.out;  // the emoji's first token: partial UTF-8
  // The summary goes to stderr: what was used and why BOS is there.
  EXPECT_NE(r.out.find("byte-level BPE tokenizer (pre-tokenizer llama-bpe), 128256 tokens"), std::string::npos);
  EXPECT_NE(r.out.find("BOS added"), std::string::npos);
}

TEST(CliTokenize, Json) {
  const std::string model = vocab("qwen2");
  SKIP_IF_ABSENT(model);
  auto r = run_loom("tokenize -m " + model + " --json -p " + sh("<|im_start|>hi \xf0\x9f\xa6\x99"), "", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = loom::test::parse_json(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.at("tokenizer").get<std::string>(), "gpt2");
  EXPECT_EQ(j.at("pre").get<std::string>(), "qwen2");
  EXPECT_EQ(j.at("n_vocab").get<double>(), 151936);
  EXPECT_FALSE(j.at("add_bos").get<bool>());
  ASSERT_FALSE(j.at("ids").empty());
  EXPECT_EQ(j.at("ids").at(0).get<double>(), 151644);
  const auto& tokens = j.at("tokens");
  ASSERT_EQ(tokens.size(), j.at("ids").size());
  EXPECT_EQ(tokens[0].at("piece").get<std::string>(), "<|im_start|>");
  EXPECT_EQ(tokens[1].at("piece").get<std::string>(), "hi");
  // The emoji spans tokens: their pieces are not UTF-8 alone, so each gives
  // its raw bytes and a U+FFFD stand-in.
  bool saw_bytes = false;
  for (const auto& t : tokens) {
    if (!t.contains("bytes")) continue;
    saw_bytes = true;
    EXPECT_NE(t.at("piece").get<std::string>().find("\xef\xbf\xbd"), std::string::npos);
  }
  EXPECT_TRUE(saw_bytes) << r.out;
}

TEST(CliTokenize, SpecialTokenText) {
  const std::string model = vocab("llama-bpe");
  SKIP_IF_ABSENT(model);
  EXPECT_EQ(run_loom("tokenize -m " + model + " -p '<|eot_id|>' --ids", "", false).out, "128000 128009\n");
  const auto plain = run_loom("tokenize -m " + model + " -p '<|eot_id|>' --ids --no-parse-special", "", false);
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(plain.out.find("128009"), std::string::npos) << plain.out;
}

TEST(CliTokenize, SentencePieceModel) {
  const std::string model = models_dir() + "/stories260K.gguf";
  SKIP_IF_ABSENT(model);
  auto r = run_loom("tokenize -m " + model + " -p 'Once upon a time' --ids", "", false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
}

TEST(CliTokenize, Errors) {
  const std::string model = vocab("gpt-2");
  SKIP_IF_ABSENT(model);
  auto none = run_loom("tokenize -m " + model);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.out.find("no text: give -p TEXT or -f FILE"), std::string::npos) << none.out;
  auto both = run_loom("tokenize -m " + model + " -p a -f b");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.out.find("not both"), std::string::npos) << both.out;
  auto bad = run_loom("tokenize -m " + model + " -p a --frobnicate");
  EXPECT_EQ(bad.exit_code, 2);
  auto unreadable = run_loom("tokenize -m " + model + " -f /nonexistent/text.txt");
  EXPECT_EQ(unreadable.exit_code, 1);
  EXPECT_NE(unreadable.out.find("cannot read '/nonexistent/text.txt'"), std::string::npos) << unreadable.out;
  auto missing = run_loom("tokenize -m /nonexistent/model.gguf -p a");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("/nonexistent/model.gguf"), std::string::npos) << missing.out;
}

TEST(CliTokenize, UnknownPreTokenizerIsAClearError) {
  loom::testing::GgufBuilder b;
  b.kv_str("tokenizer.ggml.model", "gpt2").kv_str("tokenizer.ggml.pre", "frobnicate");
  b.kv_arr_str("tokenizer.ggml.tokens", {"a", "b"}).kv_arr_str("tokenizer.ggml.merges", {"a b"});
  const std::vector<uint8_t> image = b.build();
  TempFile f(std::string(image.begin(), image.end()));
  auto r = run_loom("tokenize -m " + f.path() + " -p ab");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("unknown BPE pre-tokenizer 'frobnicate' (tokenizer.ggml.pre); loom supports default, "
                       "llama-bpe"),
            std::string::npos)
      << r.out;
}

TEST(CliTokenize, Help) {
  auto h = run_loom("--help");
  EXPECT_NE(h.out.find("tokenize"), std::string::npos);
  EXPECT_NE(h.out.find("--no-parse-special"), std::string::npos);
  EXPECT_NE(h.out.find("tokenizer.ggml.add_bos_token"), std::string::npos);
}

TEST(CliTokenize, WordPieceFilesWork) {
  const std::string m = "\xe2\x96\x81";  // U+2581, GGUF's word-start mark
  loom::testing::GgufBuilder b;
  b.kv_str("tokenizer.ggml.model", "bert");
  b.kv_arr_str("tokenizer.ggml.tokens", {"[PAD]", "[UNK]", "[CLS]", "[SEP]", m + "hello", m + ",", m + "world", "s"});
  b.kv_arr("tokenizer.ggml.token_type", loom::testing::kI32, std::vector<int32_t>{3, 2, 3, 3, 1, 1, 1, 1});
  b.kv("tokenizer.ggml.bos_token_id", loom::testing::kU32, uint32_t{2});
  b.kv("tokenizer.ggml.unknown_token_id", loom::testing::kU32, uint32_t{1});
  b.kv("tokenizer.ggml.seperator_token_id", loom::testing::kU32, uint32_t{3});
  const std::vector<uint8_t> image = b.build();
  TempFile f(std::string(image.begin(), image.end()));
  auto r = run_loom("tokenize -m " + f.path() + " --ids -p " + sh("Hello, WORLDS zz"), "", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "2 4 5 6 7 1 3\n");
}

}  // namespace
