// `loom tokenize`: the token ids (and pieces) a GGUF file's tokenizer gives a
// text. Reads only the file's metadata, so vocabulary-only files work and no
// plugin or device is loaded.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "cli.hpp"
#include "json.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "llm/tokenizer/unicode.hpp"
#include "options/arg_parse.hpp"

namespace loom::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  std::string file;  // "-": stdin
  bool have_prompt = false;
  bool ids_only = false;
  bool parse_special = true;
};

// The options (checked by the option table) into *o; "" or the error for a
// bad-arguments exit (2).
std::string parse_args(const ParsedOptions& p, TokenizeOptions* o) {
  o->model = p.text("--model");
  o->prompt = p.text("--prompt");
  o->have_prompt = p.has("--prompt");
  o->file = p.text("--file");
  o->ids_only = p.has("--ids");
  o->parse_special = !p.has("--no-parse-special");
  if (o->have_prompt && !o->file.empty()) return "give the text with -p or -f, not both";
  if (!o->have_prompt && o->file.empty()) return "no text: give -p TEXT or -f FILE";
  return "";
}

// A piece for a terminal line: backslash escapes for backslash, control
// characters and bytes that are not valid UTF-8 (a character split across
// byte-level tokens shows as \xNN per token).
std::string printable(const std::string& piece) {
  std::string out;
  for (size_t pos = 0; pos < piece.size();) {
    size_t len;
    const uint32_t cp = llm::unicode::decode_utf8(piece, pos, &len);
    const unsigned char c = static_cast<unsigned char>(piece[pos]);
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp < 0x20 || cp == 0x7f || cp >= llm::unicode::kInvalidBase) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.append(piece, pos, len);
    }
    pos += len;
  }
  return out;
}

// JSON strings must be UTF-8: invalid bytes become U+FFFD (and the token gets
// its raw "bytes" too).
bool valid_utf8(const std::string& s, std::string* repaired) {
  bool ok = true;
  for (size_t pos = 0; pos < s.size();) {
    size_t len;
    if (llm::unicode::decode_utf8(s, pos, &len) >= llm::unicode::kInvalidBase) {
      *repaired += "\xef\xbf\xbd";
      ok = false;
    } else {
      repaired->append(s, pos, len);
    }
    pos += len;
  }
  return ok;
}

void print_json(const std::string& model, const llm::Tokenizer& tok, const std::vector<llm::TokenId>& ids,
                const std::vector<std::string>& pieces) {
  const llm::SpecialTokens& sp = tok.special();
  Json out;
  out["model"] = model;
  out["tokenizer"] = tok.model_name();
  if (!tok.pre_name().empty()) out["pre"] = tok.pre_name();
  out["n_vocab"] = tok.n_vocab();
  out["add_bos"] = sp.add_bos;
  out["add_eos"] = sp.add_eos;
  out["add_sep"] = sp.add_sep && sp.sep != llm::kNoToken;
  out["n_tokens"] = ids.size();
  out["ids"] = ids;
  out["tokens"] = Json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    Json t;
    t["id"] = ids[i];
    std::string repaired;
    const bool ok = valid_utf8(pieces[i], &repaired);
    t["piece"] = repaired;
    if (!ok) {
      t["bytes"] = Json::array();
      for (unsigned char c : pieces[i]) t["bytes"].push_back(static_cast<int>(c));
    }
    out["tokens"].push_back(std::move(t));
  }
  put_json(out);
}

}  // namespace

int cmd_tokenize(std::vector<std::string> args) {
  CommonOptions common;
  ParsedOptions parsed;
  TokenizeOptions o;
  std::string error = parse_command(kTokenize, args, &common, &parsed);
  if (error.empty()) error = parse_args(parsed, &o);
  if (!error.empty()) {
    std::fprintf(stderr, "loom tokenize: %s (try 'loom tokenize --help')\n", error.c_str());
    return 2;
  }
  if (o.model.empty()) {
    std::string tried;
    o.model = default_model(&tried);
    if (o.model.empty()) return fail("loom tokenize", no_model_message(tried));
  }
  std::string text = o.prompt;
  if (!o.file.empty() && !read_text(o.file, &text))
    return fail("loom tokenize", "cannot read '" + o.file + "'");

  auto file = GgufFile::open(o.model);
  if (!file.ok()) return fail("loom tokenize", file.status().message());
  auto tok = llm::Tokenizer::from_gguf(*file);
  if (!tok.ok()) return fail("loom tokenize", tok.status().message());

  // The file's rule: BOS/EOS only when it asks for them (add_bos/add_eos).
  const llm::SpecialTokens& sp = tok->special();
  const std::vector<llm::TokenId> ids = tok->encode_prompt(text, o.parse_special);
  std::vector<std::string> pieces;
  for (llm::TokenId id : ids) {
    auto piece = tok->token_to_piece(id, /*render_special=*/true);
    if (!piece.ok()) return fail("loom tokenize", piece.status().message());
    pieces.push_back(std::move(piece).value());
  }

  if (common.json) {
    print_json(o.model, *tok, ids, pieces);
  } else if (o.ids_only) {
    std::string line;
    for (llm::TokenId id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
    std::printf("%s\n", line.c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%7d '%s'\n", ids[i], printable(pieces[i]).c_str());
  }
  // What was used, on stderr so stdout stays the tokens.
  const std::string kind = tok->model_name() == "gpt2"   ? "byte-level BPE tokenizer (pre-tokenizer " + tok->pre_name() + ")"
                           : tok->model_name() == "bert" ? "WordPiece tokenizer"
                                                         : "SentencePiece tokenizer";
  const bool bos = sp.add_bos && sp.bos != llm::kNoToken, eos = sp.add_eos && sp.eos != llm::kNoToken;
  const bool sep = sp.add_sep && sp.sep != llm::kNoToken;
  std::fprintf(stderr, "loom tokenize: %s: %s, %d tokens in the vocab; %zu tokens, %s%s%s\n", o.model.c_str(),
               kind.c_str(), tok->n_vocab(), ids.size(), bos ? "BOS added (add_bos)" : "no BOS (add_bos off)",
               eos ? ", EOS added (add_eos)" : "", sep ? ", SEP added (add_sep)" : "");
  return 0;
}

}  // namespace loom::cli
