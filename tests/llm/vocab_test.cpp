// Real tokenizers against their published ids: the vocabulary-only GGUF files
// in $LOOM_MODELS_DIR/vocab (llama.cpp's test data: ggml-vocab-NAME.gguf with
// .inp and .out). Every case of every file must match exactly.
//
// How llama.cpp's harness (test-tokenizer-0) reads them, which these tests
// follow: .inp holds the strings, each followed by "\n__ggml_vocab_test__\n"
// (so the newline before a separator is not part of the string); .out holds
// one line per string, the ids separated by spaces. Ids are produced without
// BOS/EOS and without parsing special tokens in the text (the .out lines of
// the SPM files start with no BOS although those files set add_bos_token).
#include "llm/tokenizer/tokenizer.hpp"
#include "llm_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

namespace loom::llm {
namespace {

const char kSeparator[] = "\n__ggml_vocab_test__\n";

std::string vocab_path(const std::string& name) { return test::models_dir() + "/vocab/ggml-vocab-" + name + ".gguf"; }

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

struct Case {
  std::string text;
  std::vector<TokenId> ids;
};

// The .inp strings with the .out ids; "" or what is wrong with the files.
std::string read_cases(const std::string& gguf, std::vector<Case>* out) {
  std::string inp, exp;
  if (!read_file(gguf + ".inp", &inp) || !read_file(gguf + ".out", &exp)) return "cannot read " + gguf + ".inp/.out";
  const std::string sep = kSeparator;
  std::vector<std::string> texts;
  size_t pos = 0;
  while (pos < inp.size()) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) return "text after the last separator in " + gguf + ".inp";
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream lines(exp);
  std::string line;
  for (const std::string& t : texts) {
    if (!std::getline(lines, line)) return gguf + ".out has fewer lines than .inp has strings";
    Case c;
    c.text = t;
    std::istringstream ids(line);
    for (long v; ids >> v;) c.ids.push_back(static_cast<TokenId>(v));
    out->push_back(std::move(c));
  }
  if (std::getline(lines, line) && !line.empty()) return gguf + ".out has more lines than .inp has strings";
  return "";
}

std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += " " + std::to_string(id);
  return s;
}

std::string escaped(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else {
      s += c;
    }
  }
  return s;
}

class VocabFile : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = vocab_path(GetParam());
    if (!std::ifstream(path_).good()) {
      GTEST_SKIP() << path_ << " not found (set LOOM_MODELS_DIR to the models folder holding vocab/)";
    }
    auto f = GgufFile::open(path_);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto t = Tokenizer::from_gguf(*f);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<Tokenizer>(std::move(t).value());
    const std::string err = read_cases(path_, &cases_);
    ASSERT_EQ(err, "");
    ASSERT_FALSE(cases_.empty());
  }
  std::string path_;
  std::unique_ptr<Tokenizer> tok_;
  std::vector<Case> cases_;
};

TEST_P(VocabFile, EveryCaseMatches) {
  size_t passed = 0;
  for (size_t i = 0; i < cases_.size(); ++i) {
    const Case& c = cases_[i];
    const std::vector<TokenId> got = tok_->encode(c.text, /*add_bos=*/false, /*parse_special=*/false);
    if (got == c.ids) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " case " << i << " '" << escaped(c.text) << "'\n  want" << show(c.ids)
                    << "\n  got " << show(got);
    }
  }
  std::printf("[ vocab    ] %s: %zu / %zu cases match\n", GetParam(), passed, cases_.size());
  EXPECT_EQ(passed, cases_.size());
}

// Decoding the expected ids gives the text back (BPE: always; SPM: the one
// leading space the prefix added is removed).
TEST_P(VocabFile, DecodeOfExpectedIdsIsTheText) {
  if (tok_->model_name() == "bert") GTEST_SKIP() << "WordPiece lowercases and drops accents: no round trip";
  for (const Case& c : cases_) {
    auto text = tok_->decode(c.ids);
    ASSERT_TRUE(text.ok()) << text.status().to_string();
    EXPECT_EQ(*text, c.text) << GetParam() << " ids" << show(c.ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocab, VocabFile, ::testing::Values("llama-bpe", "qwen2", "gpt-2", "phi-3", "llama-spm", "bert-bge"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

// Every ggml-vocab-*.gguf with .inp/.out in the folder, named above or not:
// a file whose tokenizer loom reads must match every case; one it does not
// read (UNIMPLEMENTED) is listed, not failed.
TEST(VocabFolder, EveryFileWithCasesMatches) {
  const std::string dir = test::models_dir() + "/vocab";
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ggml-vocab-", 0) == 0 && e.path().extension() == ".gguf" &&
        std::filesystem::exists(e.path().string() + ".inp")) {
      files.push_back(e.path().string());
    }
  }
  if (files.empty()) GTEST_SKIP() << "no ggml-vocab-*.gguf with .inp/.out in " << dir << " (set LOOM_MODELS_DIR)";
  std::sort(files.begin(), files.end());
  for (const std::string& path : files) {
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto t = Tokenizer::from_gguf(*f);
    if (!t.ok() && t.status().code() == StatusCode::kUnimplemented) {
      std::printf("[ vocab    ] %s: not read by loom: %s\n", path.c_str(), t.status().message().c_str());
      continue;
    }
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    std::vector<Case> cases;
    ASSERT_EQ(read_cases(path, &cases), "");
    size_t passed = 0;
    for (const Case& c : cases) {
      const std::vector<TokenId> got = t->encode(c.text, false, false);
      if (got == c.ids) {
        ++passed;
      } else {
        ADD_FAILURE() << path << " '" << escaped(c.text) << "'\n  want" << show(c.ids) << "\n  got " << show(got);
      }
    }
    std::printf("[ vocab    ] %s: %zu / %zu cases match\n", path.c_str(), passed, cases.size());
  }
}

}  // namespace
}  // namespace loom::llm
