// JSON text measured before a parser sees it. A JSON library parses and destroys nested values
// with recursion or a stack that grows with the nesting; a file nested 100,000 deep would end
// the program (or stop the web page for good) before any message could be printed. Every
// reader of JSON zerodp does not write itself checks the nesting first.
//
// Contract: pure; a scan of the bytes that skips strings (with their escapes) and never
// recurses, so any text is measured in time linear in its length.
#pragma once

#include <string>
#include <string_view>

namespace zerodp {

// How deep zerodp reads: far beyond any DeepSpeed config, config.json or manifest (they nest
// 2 to 5 levels), far below what a parser's stack holds.
inline constexpr int kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text`, counted up to `limit` + 1 (0 for a
// scalar). Malformed text is measured as far as it goes: the parser then says what is wrong.
int json_depth(std::string_view text, int limit = kMaxJsonDepth);

// `text` as valid UTF-8, for a JSON string: unchanged when it is valid UTF-8, else each byte
// that starts no valid sequence (a Latin-1 file name's 0xE9, a lone continuation byte, an
// overlong form, a surrogate) written as the four characters \xHH, so the name stays visible
// and unambiguous to a person rather than turned into U+FFFD or refused by the JSON writer.
std::string utf8_text(std::string_view text);

// Why `text` is not read, or empty: "nests more than 64 levels deep (zerodp reads at most
// 64)".
std::string json_depth_refusal(std::string_view text);

}  // namespace zerodp
