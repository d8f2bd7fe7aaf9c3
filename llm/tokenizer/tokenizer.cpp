// Tokenizer: building the shared state, cutting text at special tokens,
// BOS/EOS, decoding. The SPM and BPE rules live in their own files.
#include "llm/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <climits>

#include "llm/tokenizer/pretokenizer.hpp"
#include "llm/tokenizer/tokenizer_bpe.hpp"
#include "llm/tokenizer/tokenizer_model.hpp"
#include "llm/tokenizer/tokenizer_spm.hpp"
#include "llm/tokenizer/tokenizer_wpm.hpp"

namespace loom::llm {

struct Tokenizer::State {
  std::string model;
  std::string pre;
  Vocab vocab;
  SpecialTokens special;
  std::unique_ptr<TokenizerModel> impl;  // refers to vocab and special
  // Tokens that may be written in the text, by first byte, longest first.
  std::array<std::vector<TokenId>, 256> specials;
  std::vector<bool> rstrip;  // per token
  std::vector<TokenId> eog;  // sorted
};

void Vocab::build_index() {
  index.clear();
  index.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) index.emplace(tokens[i], static_cast<TokenId>(i));
}

namespace {

bool is_special_type(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

// C isspace(): what llama.cpp strips after an rstrip token.
bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Texts that end generation (llama.cpp's list), also searched for eot/eom
// when the file names none, in this order.
const char* const kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
                                 ("<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>")};  // DeepSeek
const char* const kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
                                 "<EOT>"};

}  // namespace

StatusOr<Tokenizer> Tokenizer::from_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                          std::vector<int32_t> types, SpecialTokens special, std::string source) {
  Parts p;
  p.model = "llama";
  p.tokens = std::move(tokens);
  p.scores = std::move(scores);
  p.types = std::move(types);
  p.special = special;
  p.source = std::move(source);
  return build(std::move(p));
}

StatusOr<Tokenizer> Tokenizer::from_bpe_vocab(std::vector<std::string> tokens, std::vector<int32_t> types,
                                              const std::vector<std::string_view>& merges, std::string_view pre,
                                              SpecialTokens special, std::string source) {
  Parts p;
  p.model = "gpt2";
  p.tokens = std::move(tokens);
  p.types = std::move(types);
  p.merges = merges;
  p.pre = std::string(pre);
  p.special = special;
  p.source = std::move(source);
  return build(std::move(p));
}

StatusOr<Tokenizer> Tokenizer::build(Parts p) {
  const std::string ctx = "[tokenizer.load] " + p.source + ": ";
  const size_t n = p.tokens.size();
  if (n == 0) return invalid_argument(ctx + "empty vocab");
  if (n > static_cast<size_t>(INT32_MAX)) return invalid_argument(ctx + "vocab of " + std::to_string(n) + " tokens");
  if (p.scores.empty()) p.scores.assign(n, 0.0f);
  if (p.types.empty()) p.types.assign(n, static_cast<int32_t>(TokenType::kNormal));
  if (p.scores.size() != n || p.types.size() != n) {
    return invalid_argument(ctx + "vocab sizes differ: " + std::to_string(n) + " tokens, " +
                            std::to_string(p.scores.size()) + " scores, " + std::to_string(p.types.size()) + " types");
  }
  SpecialTokens& sp = p.special;
  for (TokenId id : {sp.bos, sp.eos, sp.unk, sp.eot, sp.eom, sp.pad, sp.sep}) {
    if (id != kNoToken && (id < 0 || static_cast<size_t>(id) >= n)) {
      return invalid_argument(ctx + "special token id " + std::to_string(id) + " outside the vocab [0, " +
                              std::to_string(n) + ")");
    }
  }
  if (p.model == "gpt2") sp.add_space_prefix = false;
  if (p.model == "bert") sp.add_space_prefix = true;  // WPM words start with U+2581: decode drops the first space

  auto s = std::make_unique<State>();
  s->model = p.model;
  s->pre = p.pre;
  s->vocab.tokens = std::move(p.tokens);
  s->vocab.scores = std::move(p.scores);
  s->vocab.types.reserve(n);
  for (int32_t v : p.types) s->vocab.types.push_back(static_cast<TokenType>(v));
  s->vocab.build_index();
  const Vocab& vocab = s->vocab;

  // Ids named by text when the file gives none.
  for (const char* text : kEotTexts) {
    if (sp.eot == kNoToken) sp.eot = vocab.find(text);
  }
  if (sp.eom == kNoToken) sp.eom = vocab.find("<|eom_id|>");
  s->special = sp;

  if (s->model == "llama") {
    LOOM_ASSIGN_OR_RETURN(s->impl, SpmModel::create(vocab, s->special, p.source));
  } else if (s->model == "gpt2") {
    auto pre = PreTokenizer::from_name(p.pre);
    if (!pre.ok()) return Status(pre.status().code(), ctx + pre.status().message());
    LOOM_ASSIGN_OR_RETURN(s->impl, BpeModel::create(vocab, s->special, p.merges, std::move(pre).value(), p.source));
  } else if (s->model == "bert") {
    LOOM_ASSIGN_OR_RETURN(s->impl, WpmModel::create(vocab, s->special, p.source));
  } else {
    return unimplemented(ctx + "tokenizer model '" + s->model +
                         "' is not supported (loom reads 'llama', 'gpt2' and 'bert')");
  }

  for (TokenId id : {sp.eos, sp.eot, sp.eom}) {
    if (id != kNoToken) s->eog.push_back(id);
  }
  for (const char* text : kEogTexts) {
    if (TokenId id = vocab.find(text); id != kNoToken) s->eog.push_back(id);
  }
  std::sort(s->eog.begin(), s->eog.end());
  s->eog.erase(std::unique(s->eog.begin(), s->eog.end()), s->eog.end());

  for (size_t i = 0; i < n; ++i) {
    if (is_special_type(vocab.types[i]) && !vocab.tokens[i].empty()) {
      s->specials[static_cast<uint8_t>(vocab.tokens[i][0])].push_back(static_cast<TokenId>(i));
    }
  }
  for (auto& list : s->specials) {
    std::stable_sort(list.begin(), list.end(),
                     [&](TokenId a, TokenId b) { return vocab.text(a).size() > vocab.text(b).size(); });
  }
  s->rstrip.assign(n, false);
  for (TokenId id : p.rstrip) {
    if (id >= 0 && static_cast<size_t>(id) < n) s->rstrip[static_cast<size_t>(id)] = true;
  }
  return Tokenizer(std::shared_ptr<const State>(std::move(s)));
}

// ------------------------------------------------------------------ encode

void Tokenizer::encode_text(std::string_view text, bool parse_special, std::vector<TokenId>* out) const {
  const State& s = *state_;
  size_t plain = 0;            // start of the stretch not yet encoded
  bool after_special = true;   // the text start counts as "after a special token"
  auto flush = [&](size_t end) {
    if (end <= plain) return;
    s.impl->encode(text.substr(plain, end - plain), after_special, out);
    after_special = false;
  };
  for (size_t pos = 0; pos < text.size();) {
    TokenId hit = kNoToken;
    for (TokenId id : s.specials[static_cast<uint8_t>(text[pos])]) {
      // Without parse_special only user-defined tokens are cut out (HF and llama.cpp agree).
      if (!parse_special && s.vocab.type(id) != TokenType::kUserDefined) continue;
      const std::string& t = s.vocab.text(id);
      if (text.compare(pos, t.size(), t) == 0) {
        hit = id;
        break;  // longest first
      }
    }
    if (hit == kNoToken) {
      ++pos;
      continue;
    }
    flush(pos);
    out->push_back(hit);
    after_special = true;
    pos += s.vocab.text(hit).size();
    if (s.rstrip[static_cast<size_t>(hit)]) {
      while (pos < text.size() && is_c_space(text[pos])) ++pos;
    }
    plain = pos;
  }
  flush(text.size());
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<TokenId> out;
  if (add_bos && state_->special.bos != kNoToken) out.push_back(state_->special.bos);
  encode_text(text, parse_special, &out);
  return out;
}

std::vector<TokenId> Tokenizer::encode_prompt(std::string_view text, bool parse_special) const {
  const SpecialTokens& sp = state_->special;
  std::vector<TokenId> out = encode(text, sp.add_bos, parse_special);
  if (sp.add_eos && sp.eos != kNoToken) out.push_back(sp.eos);
  if (sp.add_sep && sp.sep != kNoToken) out.push_back(sp.sep);
  return out;
}

// ------------------------------------------------------------------ decode

StatusOr<std::string> Tokenizer::token_to_piece(TokenId id, bool render_special) const {
  if (id < 0 || id >= n_vocab()) {
    return invalid_argument("[tokenizer.decode] token id " + std::to_string(id) + " outside the vocab [0, " +
                            std::to_string(n_vocab()) + ")");
  }
  const TokenType t = state_->vocab.type(id);
  if (render_special && (t == TokenType::kControl || t == TokenType::kUnknown)) return state_->vocab.text(id);
  std::string out;
  if (t != TokenType::kControl) state_->impl->append_piece(id, &out);
  return out;
}

StatusOr<std::string> Tokenizer::decode(const std::vector<TokenId>& ids) const {
  const bool strip = state_->special.add_space_prefix;  // always false for BPE
  std::string out;
  bool at_start = true;  // at the text start or after BOS / a special token: strip the prefix space
  for (TokenId id : ids) {
    LOOM_ASSIGN_OR_RETURN(std::string piece, token_to_piece(id));
    if (id == state_->special.bos || is_special_type(state_->vocab.type(id))) {
      out += piece;
      at_start = true;
      continue;
    }
    if (piece.empty()) continue;
    if (at_start && strip && piece[0] == ' ') piece.erase(0, 1);
    at_start = false;
    out += piece;
  }
  return out;
}

// --------------------------------------------------------------- accessors

int32_t Tokenizer::n_vocab() const { return static_cast<int32_t>(state_->vocab.tokens.size()); }
const std::string& Tokenizer::token_text(TokenId id) const { return state_->vocab.tokens.at(static_cast<size_t>(id)); }
float Tokenizer::score(TokenId id) const { return state_->vocab.scores.at(static_cast<size_t>(id)); }
TokenType Tokenizer::type(TokenId id) const { return state_->vocab.types.at(static_cast<size_t>(id)); }
const SpecialTokens& Tokenizer::special() const { return state_->special; }
TokenId Tokenizer::find(std::string_view text) const { return state_->vocab.find(text); }
const std::string& Tokenizer::model_name() const { return state_->model; }
const std::string& Tokenizer::pre_name() const { return state_->pre; }

bool Tokenizer::is_eog(TokenId id) const {
  return id != kNoToken && std::binary_search(state_->eog.begin(), state_->eog.end(), id);
}

}  // namespace loom::llm
