#include "zerodp/common/error.h"

#include <cstdio>
#include <cstdlib>

namespace zerodp {
namespace {

// A reference is the field's name between two group separators, a control character that
// quote() and escape_controls() never let through from text a message quotes.
constexpr char kMark = '\x1d';

bool is_field_name(std::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// `text` with each reference replaced by name(field); a mark that opens no well-formed
// reference is kept as it is (escape_controls() shows it, it is not silently dropped).
std::string resolve(std::string_view text, const FieldNamer* name) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t open = text.find(kMark, at);
    if (open == std::string_view::npos) break;
    const std::size_t close = text.find(kMark, open + 1);
    if (close == std::string_view::npos) break;
    const std::string_view field = text.substr(open + 1, close - open - 1);
    if (!is_field_name(field)) {
      out.append(text.substr(at, open + 1 - at));
      at = open + 1;
      continue;
    }
    out.append(text.substr(at, open - at));
    out += name ? (*name)(field) : std::string(field);
    at = close + 1;
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace

std::string field_ref(std::string_view field) {
  ZERODP_CHECK_MSG(is_field_name(field), std::string(field));
  std::string ref(1, kMark);
  ref += field;
  ref += kMark;
  return ref;
}

Failure::Failure(const std::string& text)
    : std::runtime_error(resolve(text, nullptr)), text_(text) {}

std::string Failure::message(const FieldNamer& name) const {
  return resolve(text_, &name);
}

std::string field_name(std::string_view field) {
  return std::string(field);
}

std::string name_fields(std::string_view text, const FieldNamer& name) {
  return resolve(text, &name);
}

InvalidArgument::InvalidArgument(const std::string& message) : UsageError(message) {
  const std::size_t close = message.find(kMark, 1);
  ZERODP_CHECK_MSG(!message.empty() && message[0] == kMark && close != std::string::npos,
                   "an InvalidArgument's message opens with its field's reference");
  field_ = message.substr(1, close - 1);
}

InvalidArgument InvalidArgument::expected(std::string field, std::string_view expected,
                                          std::string_view got) {
  std::string message = field_ref(field) + ": expected ";
  message += expected;
  message += ", got " + shown(got);
  return InvalidArgument(std::move(field), message);
}

std::string failure_text(const std::exception& e) {
  if (const auto* failure = dynamic_cast<const Failure*>(&e)) return failure->text();
  return e.what();
}

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

std::string cut_long(std::string_view text, std::size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  // Cut on a character boundary: a UTF-8 continuation byte is never the first one left out.
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  std::string out(text.substr(0, cut));
  out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

namespace {

// The characters escape_controls() prints for one byte.
std::size_t escaped_width(unsigned char byte) {
  if (byte == '\n' || byte == '\t') return 2;
  return byte < 0x20 || byte == 0x7f ? 4 : 1;
}

}  // namespace

std::string shown(std::string_view text, std::size_t max_chars) {
  // The bound is on the text as printed: 64 control bytes escape to 256 characters.
  std::size_t cut = 0, width = 0;
  while (cut < text.size()) {
    const std::size_t w = escaped_width(static_cast<unsigned char>(text[cut]));
    if (width + w > max_chars) break;
    width += w;
    ++cut;
  }
  if (cut == text.size()) return quote(text);
  // Cut on a character boundary: a UTF-8 continuation byte is never the first one left out.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  std::string quoted = "'";
  quoted += escape_controls(text.substr(0, cut));
  quoted += "... (" + std::to_string(text.size()) + " bytes)'";
  return quoted;
}

std::string printable(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return quote(text);
  }
  return std::string(text);
}

std::string printable(std::string_view text, std::size_t max_chars) {
  // Short text without control characters comes back as it is (printable() leaves it
  // unquoted); any other is bounded as shown() bounds it.
  if (text.size() <= max_chars && printable(text).size() == text.size()) return std::string(text);
  return shown(text, max_chars);
}

void check_failed(const char* condition, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "zerodp: internal check failed at %s:%d: %s%s%s\n", file, line, condition,
               detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

}  // namespace zerodp
