// The GPT-2 byte <-> code point tables, built once.
#include "llm/tokenizer/byte_level.hpp"

#include <array>

#include "llm/tokenizer/unicode.hpp"

namespace loom::llm::byte_level {

namespace {

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 512> from_cp{};  // code points < 512 only: all 256 land there
};

const Tables& tables() {
  static const Tables t = [] {
    Tables x;
    x.from_cp.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      // Printable ASCII and Latin-1 (less the soft hyphen) stand for themselves.
      const bool keeps = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      x.to_cp[b] = keeps ? b : next++;
      unicode::append_utf8(&x.to_utf8[b], x.to_cp[b]);
      x.from_cp[x.to_cp[b]] = static_cast<int16_t>(b);
    }
    return x;
  }();
  return t;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t b) { return tables().to_cp[b]; }

int codepoint_to_byte(uint32_t cp) { return cp < 512 ? tables().from_cp[cp] : -1; }

void encode(std::string_view bytes, std::string* out) {
  const Tables& t = tables();
  for (char c : bytes) *out += t.to_utf8[static_cast<uint8_t>(c)];
}

void decode(std::string_view text, std::string* out) {
  for (size_t pos = 0; pos < text.size();) {
    size_t len;
    const int b = codepoint_to_byte(unicode::decode_utf8(text, pos, &len));
    if (b >= 0) {
      out->push_back(static_cast<char>(b));
    } else {
      out->append(text.substr(pos, len));
    }
    pos += len;
  }
}

}  // namespace loom::llm::byte_level
