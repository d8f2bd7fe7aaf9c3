// libFuzzer entry for the SPM tokenizer. The first input byte picks a mode,
// the rest is its data:
//   0  text encoded with the reference vocabulary (stories260K's, from
//      $LOOM_FUZZ_VOCAB or $LOOM_MODELS_DIR/stories260K.gguf; a built-in
//      byte-level vocabulary when neither exists): every id is in range, and
//      decode(encode(s)) == s when the vocabulary has all 256 byte tokens and
//      s holds no literal U+2581;
//   1  a list of int32 ids decoded (and each one as a piece): a status for
//      out-of-range ids, never a crash;
//   2  a GGUF image whose tokenizer.ggml.* keys make the vocabulary: a status,
//      or a tokenizer whose encode gives ids in range and whose decode works.
// scripts/fuzz.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "llm/tokenizer/tokenizer.hpp"
#include "loom/runtime/gguf.hpp"

namespace {

using loom::llm::TokenId;
using loom::llm::Tokenizer;

constexpr std::string_view kSpaceMark = "\xe2\x96\x81";

std::unique_ptr<Tokenizer> g_vocab;
bool g_all_bytes = false;  // the reference vocabulary has <0x00>..<0xFF>

// 256 byte tokens plus a few merges: enough to exercise the merge queue.
std::unique_ptr<Tokenizer> builtin_vocab() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  for (const char* t : {"\xe2\x96\x81", "\xe2\x96\x81t", "he", "\xe2\x96\x81the", "in", "ing", "an", "\xe2\x96\x81" "a"}) {
    tokens.push_back(t);
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
  auto t = Tokenizer::from_vocab(tokens, scores, types, {}, "builtin");
  if (!t.ok()) std::abort();
  return std::make_unique<Tokenizer>(std::move(t).value());
}

std::unique_ptr<Tokenizer> reference_vocab() {
  std::vector<std::string> paths;
  if (const char* v = std::getenv("LOOM_FUZZ_VOCAB"); v && *v) paths.push_back(v);
  if (const char* d = std::getenv("LOOM_MODELS_DIR"); d && *d) paths.push_back(std::string(d) + "/stories260K.gguf");
  paths.push_back("../shared/models/stories260K.gguf");
  for (const std::string& p : paths) {
    auto f = loom::GgufFile::open(p);
    if (!f.ok()) continue;
    auto t = Tokenizer::from_gguf(*f);
    if (t.ok()) return std::make_unique<Tokenizer>(std::move(t).value());
  }
  return builtin_vocab();
}

void check_ids(const Tokenizer& t, const std::vector<TokenId>& ids) {
  for (TokenId id : ids) {
    if (id < 0 || id >= t.n_vocab()) std::abort();
  }
}

void encode_text(std::string_view text) {
  const Tokenizer& t = *g_vocab;
  for (bool bos : {false, true}) {
    // Special-token text ("<s>") becomes its id by default, and control
    // tokens decode to nothing: the round trip holds for plain text only.
    const std::vector<TokenId> ids = t.encode(text, bos, /*parse_special=*/false);
    check_ids(t, ids);
    auto back = t.decode(ids);
    if (!back.ok()) std::abort();  // ids from encode are always in range
    if (g_all_bytes && text.find(kSpaceMark) == std::string_view::npos && *back != text) std::abort();
    // With special tokens parsed, ids still stay in range and decode.
    const std::vector<TokenId> special = t.encode(text, bos, /*parse_special=*/true);
    check_ids(t, special);
    if (!t.decode(special).ok()) std::abort();
  }
}

void decode_ids(const uint8_t* data, size_t size) {
  std::vector<TokenId> ids(size / sizeof(int32_t));
  if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * sizeof(int32_t));
  const Tokenizer& t = *g_vocab;
  // Small ids are the interesting ones: fold most into the vocabulary.
  for (TokenId& id : ids) {
    if (id > 0 && (id & 0x40000000) == 0) id %= t.n_vocab() + 2;
  }
  auto text = t.decode(ids);
  bool in_range = true;
  for (TokenId id : ids) {
    in_range = in_range && id >= 0 && id < t.n_vocab();
    auto piece = t.token_to_piece(id);
    if (piece.ok() != (id >= 0 && id < t.n_vocab())) std::abort();
  }
  if (text.ok() != in_range) std::abort();
}

void vocab_from_gguf(const uint8_t* data, size_t size) {
  auto f = loom::GgufFile::parse(data, size, "fuzz");
  if (!f.ok()) return;
  auto t = Tokenizer::from_gguf(*f);
  if (!t.ok()) return;
  const std::string_view sample("Once upon a time, \xc3\xa9t\xc3\xa9 \xff\xfe <s> \xe2\x96\x81 end");
  const std::vector<TokenId> ids = t->encode(sample, true);
  check_ids(*t, ids);
  if (!t->decode(ids).ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_vocab = reference_vocab();
  int bytes = 0;
  for (TokenId id = 0; id < g_vocab->n_vocab(); ++id) bytes += g_vocab->type(id) == loom::llm::TokenType::kByte;
  g_all_bytes = bytes == 256;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t* rest = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 3) {
    case 0: encode_text(std::string_view(reinterpret_cast<const char*>(rest), n)); break;
    case 1: decode_ids(rest, n); break;
    default: vocab_from_gguf(rest, n); break;
  }
  return 0;
}
