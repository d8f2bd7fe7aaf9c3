// The Unicode tables, UTF-8 decoding and the pre-tokenizer regex matcher:
// Perl/Oniguruma semantics on the constructs the BPE patterns use.
#include "llm/tokenizer/byte_level.hpp"
#include "llm/tokenizer/pretokenizer.hpp"
#include "llm/tokenizer/unicode.hpp"
#include "llm/tokenizer/unicode_regex.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loom::llm {
namespace {

using unicode::Category;

std::vector<uint32_t> cps(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t pos = 0; pos < s.size();) {
    size_t len;
    out.push_back(unicode::decode_utf8(s, pos, &len));
    pos += len;
  }
  return out;
}

UnicodeRegex re(const char* pattern) {
  auto r = UnicodeRegex::compile(pattern);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return std::move(r).value();
}

// The pieces split() cuts text into, as UTF-8 strings.
std::vector<std::string> split(const UnicodeRegex& r, std::string_view text) {
  const std::vector<uint32_t> c = cps(text);
  std::vector<size_t> ends;
  r.split(c.data(), c.size(), &ends);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t e : ends) {
    std::string piece;
    for (size_t i = start; i < e; ++i) unicode::append_utf8(&piece, c[i]);
    out.push_back(piece);
    start = e;
  }
  return out;
}

using Pieces = std::vector<std::string>;

TEST(Unicode, Categories) {
  EXPECT_EQ(unicode::category('A'), Category::kLu);
  EXPECT_EQ(unicode::category('z'), Category::kLl);
  EXPECT_EQ(unicode::category('7'), Category::kNd);
  EXPECT_EQ(unicode::category(' '), Category::kZs);
  EXPECT_EQ(unicode::category('\n'), Category::kCc);
  EXPECT_EQ(unicode::category('$'), Category::kSc);
  EXPECT_EQ(unicode::category('!'), Category::kPo);
  EXPECT_EQ(unicode::category(0x01C5), Category::kLt);   // Dž
  EXPECT_EQ(unicode::category(0x0301), Category::kMn);   // combining acute
  EXPECT_EQ(unicode::category(0x0663), Category::kNd);   // Arabic-Indic three
  EXPECT_EQ(unicode::category(0x00BD), Category::kNo);   // ½
  EXPECT_EQ(unicode::category(0x216B), Category::kNl);   // Roman numeral twelve
  EXPECT_EQ(unicode::category(0x4E2D), Category::kLo);   // 中
  EXPECT_EQ(unicode::category(0x1F999), Category::kSo);  // llama emoji (above the BMP table)
  EXPECT_EQ(unicode::category(0x1D400), Category::kLu);  // mathematical bold A
  EXPECT_EQ(unicode::category(0xE000), Category::kCo);
  EXPECT_EQ(unicode::category(0x0378), Category::kCn);   // unassigned
  EXPECT_EQ(unicode::category(unicode::kInvalidBase + 0xff), Category::kCn);
  EXPECT_EQ(unicode::category_mask("L"), unicode::kLetter);
  EXPECT_EQ(unicode::category_mask("Nd"), unicode::bit(Category::kNd));
  EXPECT_EQ(unicode::category_mask("Han"), 0u);
}

TEST(Unicode, WhiteSpaceIsThePropertyNotIsspace) {
  for (uint32_t c : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u,
                     0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    EXPECT_TRUE(unicode::is_whitespace(c)) << std::hex << c;
  }
  for (uint32_t c : {0x1Cu, 0x1Fu, 0x200Bu, 0x180Eu, 0xFEFFu, static_cast<uint32_t>('a')}) {
    EXPECT_FALSE(unicode::is_whitespace(c)) << std::hex << c;
  }
}

TEST(Unicode, Utf8DecodingKeepsInvalidBytes) {
  size_t len;
  EXPECT_EQ(unicode::decode_utf8("\xf0\x9f\xa6\x99", 0, &len), 0x1F999u);
  EXPECT_EQ(len, 4u);
  // Stray continuation, overlong, surrogate, truncated, above U+10FFFF: one byte each.
  for (const char* bad : {"\x80", "\xc0\x80", "\xed\xa0\x80", "\xe4\xb8", "\xf4\x90\x80\x80", "\xff"}) {
    const std::string s = bad;
    EXPECT_EQ(unicode::decode_utf8(s, 0, &len), unicode::kInvalidBase + static_cast<uint8_t>(s[0])) << s;
    EXPECT_EQ(len, 1u);
  }
  std::string out;
  unicode::append_utf8(&out, 0x1F999);
  unicode::append_utf8(&out, 0xE9);
  EXPECT_EQ(out, "\xf0\x9f\xa6\x99\xc3\xa9");
}

TEST(ByteLevel, Gpt2Alphabet) {
  EXPECT_EQ(byte_level::byte_to_codepoint(' '), 0x120u);   // Ġ
  EXPECT_EQ(byte_level::byte_to_codepoint('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(byte_level::byte_to_codepoint('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(byte_level::byte_to_codepoint(0xAD), 0x143u);  // soft hyphen is remapped
  EXPECT_EQ(byte_level::codepoint_to_byte(0x120), ' ');
  EXPECT_EQ(byte_level::codepoint_to_byte('~'), '~');
  EXPECT_EQ(byte_level::codepoint_to_byte(0x20), -1);       // a raw space is not in the alphabet
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string enc, dec;
  byte_level::encode(all, &enc);
  byte_level::decode(enc, &dec);
  EXPECT_EQ(dec, all);
}

TEST(UnicodeRegex, NegativeLookaheadBacktracks) {
  // GPT-2's tail: "\s+(?!\S)" leaves the last space to the word after it.
  const UnicodeRegex r = re(R"( ?\p{L}+|\s+(?!\S)|\s+)");
  EXPECT_EQ(split(r, "a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(split(r, "a   "), (Pieces{"a", "   "}));  // at the end nothing follows: all of it
  EXPECT_EQ(split(r, "a\t b"), (Pieces{"a", "\t", " b"}));
  EXPECT_EQ(split(r, "a\tb"), (Pieces{"a", "\t", "b"}));  // one space before a letter: the last \s+
}

TEST(UnicodeRegex, CaseInsensitiveGroup) {
  const UnicodeRegex r = re(R"((?i:'s|'ll)|\p{L}+|[^\s\p{L}]+|\s+)");
  EXPECT_EQ(split(r, "it's HE'LL x'Ll"), (Pieces{"it", "'s", " ", "HE", "'LL", " ", "x", "'Ll"}));
  // Only ASCII folds: U+017F (long s) is a letter, not an 's'.
  EXPECT_EQ(split(r, "'\xc5\xbf"), (Pieces{"'", "\xc5\xbf"}));
}

TEST(UnicodeRegex, CountedRepeatAndClasses) {
  const UnicodeRegex r = re(R"(\p{N}{1,3}|[^\r\n\p{L}\p{N}]?\p{L}+|\s+)");
  EXPECT_EQ(split(r, "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split(r, "x-ab \xd9\xa3\xd9\xa3"), (Pieces{"x", "-ab", " ", "\xd9\xa3\xd9\xa3"}));  // Arabic digits are N
  EXPECT_EQ(split(r, "a\n\n!b"), (Pieces{"a", "\n\n", "!b"}));
  // Text between matches is kept as its own pieces (HF's "isolated").
  const UnicodeRegex gap = re(R"(\p{L}+)");
  EXPECT_EQ(split(gap, "..ab..cd"), (Pieces{"..", "ab", "..", "cd"}));
}

TEST(UnicodeRegex, LookaheadInsideRepetition) {
  // Tekken's "letters that are not lowercase ASCII" idiom.
  const UnicodeRegex r = re(R"(((?=[\p{L}])([^a-z]))+|\p{L}+|.)");
  EXPECT_EQ(split(r, "ABcd"), (Pieces{"AB", "cd"}));
  EXPECT_EQ(split(r, "1A"), (Pieces{"1", "A"}));
}

TEST(UnicodeRegex, AnchorsEscapesAndRanges) {
  const UnicodeRegex end = re(R"(\s+$|\S+)");
  EXPECT_EQ(split(end, "ab  "), (Pieces{"ab", "  "}));
  EXPECT_EQ(split(end, "a  b"), (Pieces{"a", "  ", "b"}));  // the spaces are a gap here
  const UnicodeRegex esc = re(R"([\x{4E00}-\x{9FA5}]+|\u0041|\$+|[.\-]+)");
  EXPECT_EQ(split(esc, "\xe4\xb8\xad\xe6\x96\x87" "A$$-.-"), (Pieces{"\xe4\xb8\xad\xe6\x96\x87", "A", "$$", "-.-"}));
  // Negated classes take bytes that are not UTF-8 (category Cn).
  const UnicodeRegex neg = re(R"([^\s\p{L}\p{N}]+|\p{L}+)");
  EXPECT_EQ(split(neg, "a\xff\xfe" "b").size(), 3u);
}

TEST(UnicodeRegex, LongRunsDoNotRecurse) {
  // Repetition of one-character items is a loop: 1M spaces or letters are fine.
  const UnicodeRegex r = re(R"((?i:'s)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|)"
                           R"(\s*[\r\n]+|\s+(?!\S)|\s+)");
  for (const char* unit : {" ", "a", "\n", "!"}) {
    std::string s;
    for (int i = 0; i < 1000000; ++i) s += unit;
    s += "x";
    const std::vector<uint32_t> c = cps(s);
    std::vector<size_t> ends;
    r.split(c.data(), c.size(), &ends);
    ASSERT_FALSE(ends.empty());
    EXPECT_EQ(ends.back(), c.size());
  }
}

TEST(UnicodeRegex, NoQuadraticRescans) {
  // "\s+$" fails at every space of a run that does not end the text; each
  // failure proves the next, so this stays linear (200k spaces).
  const UnicodeRegex r = re(R"(\s+$)");
  std::string s(200000, ' ');
  s += "1";
  const std::vector<uint32_t> c = cps(s);
  std::vector<size_t> ends;
  r.split(c.data(), c.size(), &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{c.size()}));  // no match: one gap piece
  s.pop_back();
  const std::vector<uint32_t> d = cps(s + "1" + s);
  ends.clear();
  r.split(d.data(), d.size(), &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{200001, d.size()}));
}

TEST(UnicodeRegex, RejectsWhatItDoesNotImplement) {
  struct Bad {
    const char* pattern;
    const char* what;
  };
  for (const Bad& b : {Bad{"a+?", "lazy and possessive"}, Bad{"a++", "lazy and possessive"},
                       Bad{"\\p{Han}", "unknown property \\p{Han}"}, Bad{"(ab", "unclosed '('"},
                       Bad{"ab)", "unbalanced ')'"}, Bad{"[ab", "unclosed '['"}, Bad{"(?<=a)b", "unsupported group"},
                       Bad{"(ab)+", "unbounded repetition"}, Bad{"\\b", "unsupported escape"},
                       Bad{"[z-a]", "range out of order"}, Bad{"*a", "quantifier without a target"}}) {
    auto r = UnicodeRegex::compile(b.pattern);
    ASSERT_FALSE(r.ok()) << b.pattern;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(b.what), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("[tokenizer.regex]"), std::string::npos);
  }
}

TEST(PreTokenizer, EveryNameCompiles) {
  for (const std::string& name : PreTokenizer::supported_names()) {
    auto p = PreTokenizer::from_name(name);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().to_string();
  }
  for (const char* required :
       {"llama-bpe",  "qwen2",      "gpt-2",        "deepseek-llm", "deepseek-coder", "falcon",    "starcoder",
        "refact",     "command-r",  "mpt",          "default",      "llama3",         "smaug-bpe", "dbrx",
        "olmo",       "stablelm2",  "jina-v2-code", "kormo",        "a.x-4.0",        "mellum",    "exaone4",
        "seed-coder", "bailingmoe", "hunyuan",      "trillion",     "granite-docling"}) {
    EXPECT_TRUE(PreTokenizer::from_name(required).ok()) << required;
  }
  // Aliases split as their family does (llama.cpp's table): exaone4 as gpt-2, kormo as qwen2.
  const std::string text = "Hello world's 12345 \xe4\xbd\xa0\xe5\xa5\xbd!!  \n\n x";
  for (const auto& [alias, family] : {std::pair<const char*, const char*>{"exaone4", "gpt-2"},
                                      {"mellum", "gpt-2"},
                                      {"a.x-4.0", "gpt-2"},
                                      {"kormo", "qwen2"},
                                      {"glm4", "llama-bpe"},
                                      {"chatglm-bpe", "llama-bpe"},
                                      {"hunyuan", "qwen2"},
                                      {"grok-2", "qwen2"},
                                      {"hunyuan-dense", "deepseek-v3"},
                                      {"trillion", "gpt-2"},
                                      {"granite-docling", "gpt-2"},
                                      {"minimax-m2", "gpt-4o"},
                                      {"bailingmoe2", "bailingmoe"},
                                      {"llada-moe", "bailingmoe"}}) {
    auto a = PreTokenizer::from_name(alias);
    auto f = PreTokenizer::from_name(family);
    ASSERT_TRUE(a.ok() && f.ok()) << alias;
    std::vector<std::string_view> pa, pf;
    a->split(text, &pa);
    f->split(text, &pf);
    EXPECT_EQ(pa, pf) << alias;
    EXPECT_GT(pa.size(), 5u) << alias;
  }
  EXPECT_TRUE(PreTokenizer::from_name("llama-bpe")->ignore_merges());
  EXPECT_TRUE(PreTokenizer::from_name("llama-bpe")->add_bos());
  EXPECT_FALSE(PreTokenizer::from_name("qwen2")->add_bos());
}

// Seed-Coder's expression (Seed-OSS): qwen2's, except that a run of
// punctuation stops before a newline and takes none after it; Ling's
// (bailingmoe) takes one newline per piece after its whitespace.
TEST(PreTokenizer, SeedCoderAndBailingSplitAsTheirExpressionsSay) {
  auto split = [](const char* name, std::string_view text) {
    auto p = PreTokenizer::from_name(name);
    EXPECT_TRUE(p.ok()) << name;
    std::vector<std::string_view> pieces;
    if (p.ok()) p->split(text, &pieces);
    return std::vector<std::string>(pieces.begin(), pieces.end());
  };
  const std::string text = "Hello world's 12 \xe4\xbd\xa0!!\nb";
  EXPECT_EQ(split("seed-coder", text),
            (std::vector<std::string>{"Hello", " world", "'s", " ", "1", "2", " \xe4\xbd\xa0", "!!", "\n", "b"}));
  EXPECT_EQ(split("qwen2", text),
            (std::vector<std::string>{"Hello", " world", "'s", " ", "1", "2", " \xe4\xbd\xa0", "!!\n", "b"}));
  EXPECT_EQ(split("bailingmoe", "It'LL 7\n\n x"), (std::vector<std::string>{"It", "'LL", " ", "7", "\n\n", " x"}));
}

TEST(PreTokenizer, UnknownNameListsTheSupportedOnes) {
  auto p = PreTokenizer::from_name("frobnicate");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(p.status().message().find("unknown BPE pre-tokenizer 'frobnicate'"), std::string::npos);
  EXPECT_NE(p.status().message().find("llama-bpe"), std::string::npos);
  EXPECT_NE(p.status().message().find("deepseek-coder"), std::string::npos);
}

TEST(PreTokenizer, SequencesCutThePiecesOfThePreviousExpression) {
  // "default": punctuation runs first, then GPT-2's expression inside the rest,
  // then numbers, then threes of ASCII digits.
  auto p = PreTokenizer::from_name("default");
  ASSERT_TRUE(p.ok());
  std::vector<std::string_view> pieces;
  p->split("Hi, you 12345!!", &pieces);
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"Hi", ",", " you", " ", "123", "45", "!!"}));
  // deepseek-coder: newlines alone, letters with one space, digits one by one.
  auto d = PreTokenizer::from_name("deepseek-coder");
  ASSERT_TRUE(d.ok());
  pieces.clear();
  d->split("ab 12\n\xe4\xb8\xad", &pieces);
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"ab", " ", "1", "2", "\n", "\xe4\xb8\xad"}));
}

}  // namespace
}  // namespace loom::llm
