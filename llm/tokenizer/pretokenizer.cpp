// The pre-tokenizer table: tokenizer.ggml.pre names -> patterns and flags.
// Patterns are written as in the models' tokenizer.json (llama.cpp keeps the
// same expressions, sometimes with (?i:...) spelled out as [sS] classes).
#include "llm/tokenizer/pretokenizer.hpp"

#include "llm/tokenizer/unicode.hpp"

namespace loom::llm {

namespace {

// The shared GPT-2 expression (GPT-2, and the tail of several others).
#define LOOM_GPT2_PATTERN R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re"

enum Family {
  kDefault,
  kLlama3,
  kGpt2,
  kQwen2,
  kDeepseekLlm,
  kDeepseekCoder,
  kDeepseekV3,
  kFalcon,
  kStarcoder,
  kBloom,
  kViking,
  kTekken,
  kGpt4o,
  kSeedCoder,
  kBailing,
  kFamilyCount
};

const std::vector<const char*>& family_patterns(Family f) {
  static const std::vector<const char*> kPatterns[kFamilyCount] = {
      // kDefault: what llama.cpp uses for "default" and for a gpt2 file without a pre.
      {R"re([\p{P}\$\+<=>\^~\|]+)re", LOOM_GPT2_PATTERN, R"re(\p{N}+)re", R"re([0-9][0-9][0-9])re"},
      // kLlama3: llama 3's (= OpenAI cl100k's) expression.
      {R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)re"
       R"re( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
      // kGpt2
      {LOOM_GPT2_PATTERN},
      // kQwen2: llama 3's with single digits.
      {R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)re"
       R"re( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
      // kDeepseekLlm: newlines alone; cased letters (Unicode's LC ranges); ASCII and
      // CJK punctuation; trailing spaces; CJK ideographs and Hangul; numbers.
      {R"re([\r\n])re",
       R"re(\s?[)re"
       R"re(A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})re"
       R"re(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386})re"
       R"re(\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F})re"
       R"re(\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA})re"
       R"re(\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})re"
       R"re(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D})re"
       R"re(\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4})re"
       R"re(\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})re"
       R"re(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})re"
       R"re(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})re"
       R"re(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})re"
       R"re(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})re"
       R"re(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E})re"
       R"re(\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A})re"
       R"re(\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB})re"
       R"re(\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943})re"
       R"re(]+)re",
       R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re", R"re(\s+$)re",
       R"re([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re", R"re(\p{N}+)re"},
      // kDeepseekCoder
      {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re",
       R"re([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re", R"re(\p{N})re"},
      // kDeepseekV3: numbers in threes, CJK and kana runs, then the main expression.
      {R"re(\p{N}{1,3})re", R"re([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)re",
       R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|)re"
       R"re([^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|)re"
       R"re(\s+(?!\S)|\s+)re"},
      // kFalcon
      {R"re([\p{P}\$\+<=>\^~\|`]+)re", LOOM_GPT2_PATTERN, R"re([0-9][0-9][0-9])re"},
      // kStarcoder: single digits, then GPT-2's.
      {R"re(\p{N})re", LOOM_GPT2_PATTERN},
      // kBloom
      {R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)re"},
      // kViking
      {R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)re", R"re(\p{N})re"},
      // kTekken (Mistral Nemo and later): cased words split at case changes.
      {R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)re"
       R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|)re"
       R"re(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
      // kGpt4o (OpenAI o200k; llama 4): tekken's words plus contractions.
      {R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)re"
       R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)?|)re"
       R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)re"
       R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)?|)re"
       R"re(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
      // kSeedCoder (ByteDance Seed: Seed-Coder, Seed-OSS): qwen2's with
      // punctuation runs that stop before newlines and take none after.
      {R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}|)re"
       R"re( ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
      // kBailing (Ling / Ring, LLaDA-MoE): contractions after an apostrophe,
      // single digits, one newline at a time.
      {R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)re"
       R"re( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re"},
  };
  return kPatterns[f];
}

#undef LOOM_GPT2_PATTERN

struct NameEntry {
  const char* name;
  Family family;
  bool ignore_merges;
  bool add_bos;
  bool no_bos = false;  // the file's BOS id is ignored: no BOS at all (llama.cpp's for GLM-4)
};

// Names as converters write them (llama.cpp's convert_hf_to_gguf_update.py).
// Aliases share their family's expressions; flags follow llama.cpp.
const NameEntry kNames[] = {
    {"default", kDefault, false, false},
    // llama 3 and the files that reuse its tokenizer.json.
    {"llama-bpe", kLlama3, true, true},
    {"llama3", kLlama3, true, true},
    {"llama-v3", kLlama3, true, true},
    {"falcon3", kLlama3, true, true},
    {"falcon-h1", kLlama3, true, true},
    {"pixtral", kLlama3, true, true},
    // Same expression as llama 3, without its merge and BOS rules.
    {"dbrx", kLlama3, false, false},
    {"smaug-bpe", kLlama3, false, false},
    {"hunyuan", kQwen2, false, false},
    {"grok-2", kQwen2, false, false},
    {"hunyuan-dense", kDeepseekV3, false, false},
    {"trillion", kGpt2, false, false},
    {"granite-docling", kGpt2, false, false},
    {"minimax-m2", kGpt4o, false, false},
    {"seed-coder", kSeedCoder, false, false},
    {"bailingmoe", kBailing, false, false},
    {"bailingmoe2", kBailing, false, false},
    {"llada-moe", kBailing, false, false},
    // GLM-4 (chatglm-bpe; glm4: GLM-4-0414): no BOS whatever the file says;
    // its chat template starts with [gMASK]<sop>.
    {"chatglm-bpe", kLlama3, false, false, true},
    {"glm4", kLlama3, false, false, true},
    {"qwen2", kQwen2, false, false},
    {"deepseek-r1-qwen", kQwen2, false, false},
    {"kormo", kQwen2, false, false},
    {"megrez", kQwen2, false, false},
    {"stablelm2", kQwen2, false, false},
    {"gpt-2", kGpt2, false, false},
    {"phi-2", kGpt2, false, false},
    {"mpt", kGpt2, false, false},
    {"olmo", kGpt2, false, false},
    {"jais", kGpt2, false, false},
    {"gigachat", kGpt2, false, false},
    {"a.x-4.0", kGpt2, false, false},
    {"mellum", kGpt2, false, false},
    {"exaone4", kGpt2, false, false},
    {"roberta-bpe", kGpt2, false, false},
    {"jina-es", kGpt2, false, false},
    {"jina-de", kGpt2, false, false},
    {"jina-v1-en", kGpt2, false, false},
    {"jina-v2-es", kGpt2, false, false},
    {"jina-v2-de", kGpt2, false, false},
    {"jina-v2-code", kGpt2, false, false},
    {"deepseek-llm", kDeepseekLlm, false, false},
    {"deepseek-coder", kDeepseekCoder, false, false},
    {"deepseek-v3", kDeepseekV3, false, false},
    {"falcon", kFalcon, false, false},
    {"starcoder", kStarcoder, false, false},
    {"refact", kStarcoder, false, false},
    {"command-r", kStarcoder, false, false},
    {"smollm", kStarcoder, false, false},
    {"codeshell", kStarcoder, false, false},
    {"exaone", kStarcoder, false, false},
    {"minerva-7b", kStarcoder, false, false},
    {"bloom", kBloom, false, false},
    {"poro-chat", kBloom, false, false},
    {"gpt3-finnish", kBloom, false, false},
    {"viking", kViking, false, false},
    {"tekken", kTekken, true, true},
    {"gpt-4o", kGpt4o, false, false},
    {"llama4", kGpt4o, false, false},
};

}  // namespace

std::vector<std::string> PreTokenizer::supported_names() {
  std::vector<std::string> out;
  for (const NameEntry& e : kNames) out.emplace_back(e.name);
  return out;
}

StatusOr<PreTokenizer> PreTokenizer::from_name(std::string_view name) {
  for (const NameEntry& e : kNames) {
    if (name != e.name) continue;
    PreTokenizer p;
    p.name_ = e.name;
    p.ignore_merges_ = e.ignore_merges;
    p.add_bos_ = e.add_bos;
    p.no_bos_ = e.no_bos;
    for (const char* pattern : family_patterns(e.family)) {
      LOOM_ASSIGN_OR_RETURN(UnicodeRegex re, UnicodeRegex::compile(pattern));
      p.regexes_.push_back(std::move(re));
    }
    return StatusOr<PreTokenizer>(std::move(p));
  }
  std::string list;
  for (const NameEntry& e : kNames) list += (list.empty() ? "" : ", ") + std::string(e.name);
  return unimplemented("unknown BPE pre-tokenizer '" + std::string(name) + "' (tokenizer.ggml.pre); loom supports " +
                       list);
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>* out) const {
  std::vector<uint32_t> cps;
  std::vector<size_t> offsets;  // byte offset of each code point, then the end
  cps.reserve(text.size());
  offsets.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    size_t len;
    cps.push_back(unicode::decode_utf8(text, pos, &len));
    offsets.push_back(pos);
    pos += len;
  }
  offsets.push_back(text.size());

  // Piece ends in code points; each expression cuts every piece of the last.
  std::vector<size_t> ends = {cps.size()}, next;
  if (cps.empty()) ends.clear();
  for (const UnicodeRegex& re : regexes_) {
    next.clear();
    size_t start = 0;
    std::vector<size_t> local;
    for (size_t end : ends) {
      local.clear();
      re.split(cps.data() + start, end - start, &local);
      for (size_t e : local) next.push_back(start + e);
      start = end;
    }
    ends.swap(next);
  }
  size_t start = 0;
  for (size_t end : ends) {
    out->push_back(text.substr(offsets[start], offsets[end] - offsets[start]));
    start = end;
  }
}

}  // namespace loom::llm
