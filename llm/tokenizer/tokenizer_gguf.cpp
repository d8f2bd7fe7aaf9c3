// Tokenizer::from_gguf: the tokenizer.ggml.* metadata of a GGUF file (no
// tensors needed, so vocabulary-only files work).
#include <algorithm>
#include <cctype>
#include <climits>
#include <utility>

#include "llm/tokenizer/pretokenizer.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "loom/runtime/log.hpp"

namespace loom::llm {

namespace {

StatusOr<TokenId> special_id(const GgufFile& f, const char* key, TokenId fallback) {
  if (!f.has(key)) return fallback;
  LOOM_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  // Writers store "none" as uint32 0xffffffff or int32 -1.
  if (v == 0xffffffffll || v == -1) return kNoToken;
  if (v < 0 || v > INT32_MAX) {
    return invalid_argument("[tokenizer.load] " + f.name() + ": key '" + key + "' = " + std::to_string(v) +
                            " is not a token id");
  }
  return static_cast<TokenId>(v);
}

StatusOr<bool> optional_bool(const GgufFile& f, const char* key, bool fallback) {
  if (!f.has(key)) return fallback;
  return f.get_bool(key);
}

// Phi-3's added tokens swallow the whitespace after them (rstrip in its
// tokenizer.json; GGUF has no field for it, so llama.cpp keys it on the name).
std::vector<TokenId> phi3_rstrip(const GgufFile& f, const std::vector<std::string>& tokens,
                                 const std::vector<int32_t>& types) {
  std::vector<TokenId> out;
  auto name = f.get_str("general.name");
  if (!name.ok()) return out;
  std::string lower(*name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find("phi-3") == std::string::npos && lower.find("phi3") == std::string::npos) return out;
  for (size_t i = 0; i < tokens.size() && i < types.size(); ++i) {
    const auto t = static_cast<TokenType>(types[i]);
    if (t != TokenType::kControl && t != TokenType::kUserDefined && t != TokenType::kUnknown) continue;
    if (tokens[i] == "<unk>" || tokens[i] == "<s>" || tokens[i] == "<|endoftext|>") continue;
    out.push_back(static_cast<TokenId>(i));
  }
  return out;
}

}  // namespace

StatusOr<Tokenizer> Tokenizer::from_gguf(const GgufFile& f) {
  const std::string ctx = "[tokenizer.load] " + f.name() + ": ";
  if (!f.has("tokenizer.ggml.model")) {
    return invalid_argument(ctx + "no tokenizer.ggml.model: the file has no tokenizer");
  }
  LOOM_ASSIGN_OR_RETURN(std::string_view model, f.get_str("tokenizer.ggml.model"));
  const bool bpe = model == "gpt2";
  const bool wpm = model == "bert";
  if (model != "llama" && !bpe && !wpm) {
    return unimplemented(ctx + "tokenizer model '" + std::string(model) +
                         "' is not supported (loom reads 'llama' (SentencePiece), 'gpt2' (byte-level BPE) and "
                         "'bert' (WordPiece))");
  }
  Parts p;
  p.model = std::string(model);
  p.source = f.name();
  SpecialTokens& sp = p.special;
  bool no_bos = false;
  if (bpe) {
    // The pre-tokenizer decides the add_bos default; an unknown one fails here,
    // before anything else is read.
    p.pre = "default";
    if (f.has("tokenizer.ggml.pre")) {
      LOOM_ASSIGN_OR_RETURN(std::string_view pre, f.get_str("tokenizer.ggml.pre"));
      p.pre = std::string(pre);
    } else {
      LOOM_LOG_WARN("llm", f.name() + ": no tokenizer.ggml.pre; using the 'default' pre-tokenizer (text may be split "
                           "differently from the model's own tokenizer)");
    }
    auto pre = PreTokenizer::from_name(p.pre);
    if (!pre.ok()) return Status(pre.status().code(), ctx + pre.status().message());
    sp.bos = sp.eos = sp.unk = kNoToken;
    sp.add_bos = pre->add_bos();
    no_bos = pre->no_bos();
    sp.add_space_prefix = false;
    if (!f.has("tokenizer.ggml.merges")) {
      return invalid_argument(ctx + "a 'gpt2' tokenizer needs tokenizer.ggml.merges");
    }
    LOOM_ASSIGN_OR_RETURN(p.merges, f.get_arr_str("tokenizer.ggml.merges"));
  }
  if (wpm) {
    // BERT's ids, used when the file names none (llama.cpp's defaults).
    sp.bos = 101;  // [CLS]
    sp.eos = kNoToken;
    sp.unk = 100;  // [UNK]
    sp.sep = 102;  // [SEP]
    sp.pad = 0;    // [PAD]
    sp.add_bos = true;
    sp.add_sep = true;
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string_view> views, f.get_arr_str("tokenizer.ggml.tokens"));
  p.tokens.assign(views.begin(), views.end());
  if (f.has("tokenizer.ggml.scores")) {
    LOOM_ASSIGN_OR_RETURN(p.scores, f.get_arr_f32("tokenizer.ggml.scores"));
  }
  if (f.has("tokenizer.ggml.token_type")) {
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> t, f.get_arr_int("tokenizer.ggml.token_type"));
    p.types.reserve(t.size());
    for (int64_t v : t) p.types.push_back(v < INT32_MIN || v > INT32_MAX ? 0 : static_cast<int32_t>(v));
  }
  LOOM_ASSIGN_OR_RETURN(sp.bos, special_id(f, "tokenizer.ggml.bos_token_id", sp.bos));
  if (no_bos) sp.bos = kNoToken;
  LOOM_ASSIGN_OR_RETURN(sp.eos, special_id(f, "tokenizer.ggml.eos_token_id", sp.eos));
  LOOM_ASSIGN_OR_RETURN(sp.unk, special_id(f, "tokenizer.ggml.unknown_token_id", sp.unk));
  LOOM_ASSIGN_OR_RETURN(sp.eot, special_id(f, "tokenizer.ggml.eot_token_id", sp.eot));
  LOOM_ASSIGN_OR_RETURN(sp.eom, special_id(f, "tokenizer.ggml.eom_token_id", sp.eom));
  LOOM_ASSIGN_OR_RETURN(sp.pad, special_id(f, "tokenizer.ggml.padding_token_id", sp.pad));
  LOOM_ASSIGN_OR_RETURN(sp.add_bos, optional_bool(f, "tokenizer.ggml.add_bos_token", sp.add_bos));
  LOOM_ASSIGN_OR_RETURN(sp.add_eos, optional_bool(f, "tokenizer.ggml.add_eos_token", sp.add_eos));
  LOOM_ASSIGN_OR_RETURN(sp.sep, special_id(f, "tokenizer.ggml.seperator_token_id", sp.sep));
  LOOM_ASSIGN_OR_RETURN(sp.add_sep, optional_bool(f, "tokenizer.ggml.add_sep_token", sp.add_sep));
  if (wpm) {
    // A default id a small vocab does not have means "none" (an id the file
    // names is checked by build()).
    const auto n = static_cast<TokenId>(p.tokens.size());
    const std::pair<TokenId*, const char*> defaults[] = {
        {&sp.bos, "tokenizer.ggml.bos_token_id"}, {&sp.unk, "tokenizer.ggml.unknown_token_id"},
        {&sp.sep, "tokenizer.ggml.seperator_token_id"}, {&sp.pad, "tokenizer.ggml.padding_token_id"}};
    for (const auto& [id, key] : defaults) {
      if (!f.has(key) && *id >= n) *id = kNoToken;
    }
  }
  if (!bpe && !wpm) {
    LOOM_ASSIGN_OR_RETURN(sp.add_space_prefix,
                          optional_bool(f, "tokenizer.ggml.add_space_prefix", sp.add_space_prefix));
  }
  p.rstrip = phi3_rstrip(f, p.tokens, p.types);
  return build(std::move(p));
}

}  // namespace loom::llm
