#include "zerodp/common/text_wrap.h"

#include <algorithm>

namespace zerodp {

std::string fill_words(std::string_view words, std::size_t width, std::size_t indent,
                       std::size_t first) {
  std::string out;
  std::size_t column = first;
  bool line_empty = true;
  const auto new_line = [&] {
    out += '\n';
    out.append(indent, ' ');
    column = indent;
    line_empty = true;
  };
  std::size_t i = 0;
  while (i < words.size()) {
    while (i < words.size() && words[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < words.size() && words[i] != ' ') ++i;
    std::string_view word = words.substr(start, i - start);
    if (word.empty()) break;
    if (!line_empty && column + 1 + word.size() > width) new_line();
    if (!line_empty) {
      out += ' ';
      ++column;
    }
    // A word wider than a whole line: cut at the width, which is all a terminal can show.
    while (width > indent && column + word.size() > width) {
      const std::size_t room = width > column ? width - column : 0;
      if (room == 0) {
        new_line();
        continue;
      }
      out += word.substr(0, room);
      word.remove_prefix(room);
      new_line();
    }
    out += word;
    column += word.size();
    line_empty = false;
  }
  return out;
}

std::string wrap_long_lines(std::string_view text, std::size_t width, std::size_t hang) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool has_end = end != std::string_view::npos;
    if (!has_end) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    if (line.size() <= width) {
      out += line;
    } else {
      const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
      out.append(lead, ' ');
      out += fill_words(line.substr(lead), width, lead + hang, lead);
    }
    if (has_end) out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace zerodp
