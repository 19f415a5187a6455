#include "zerodp/common/json_text.h"

namespace zerodp {

int json_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::string json_depth_refusal(std::string_view text) {
  if (json_depth(text) <= kMaxJsonDepth) return {};
  return "nests more than " + std::to_string(kMaxJsonDepth) +
         " levels deep (zerodp reads at most " + std::to_string(kMaxJsonDepth) + ")";
}

}  // namespace zerodp
