#include "zerodp/common/error.h"

#include <cstdio>
#include <cstdlib>

namespace zerodp {

std::string escape_controls(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

std::string quote(std::string_view text) {
  std::string quoted = "'";  // appended in steps: GCC 12 warns falsely on "'" + string
  quoted += escape_controls(text);
  quoted += '\'';
  return quoted;
}

std::string printable(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return quote(text);
  }
  return std::string(text);
}

void check_failed(const char* condition, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "zerodp: internal check failed at %s:%d: %s%s%s\n", file, line, condition,
               detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

}  // namespace zerodp
