// GPT-2's byte-level alphabet: each of the 256 byte values stands for one
// printable code point (the printable Latin-1 bytes for themselves, the rest
// for U+0100.., e.g. space -> U+0120 'Ġ', newline -> U+010A 'Ċ'), so byte-level
// BPE vocabularies hold only visible characters.
//
// Thread-safety: pure functions over constant tables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loom::llm::byte_level {

// The code point byte b stands for.
uint32_t byte_to_codepoint(uint8_t b);
// The byte a code point stands for; -1 when cp is not one of the 256.
int codepoint_to_byte(uint32_t cp);

// Appends the alphabet's UTF-8 text for raw bytes.
void encode(std::string_view bytes, std::string* out);
// Appends the raw bytes a byte-level text stands for. Characters outside the
// alphabet (or invalid UTF-8) are copied unchanged.
void decode(std::string_view text, std::string* out);

}  // namespace loom::llm::byte_level
