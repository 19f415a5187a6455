// Text for a terminal of a given width: words filled into lines, and a text's long lines
// wrapped, so that what zerodp prints for people fits the columns it promises (plan: 100,
// help: 80).
//
// Contract:
//  - Columns are bytes: the text is ASCII but for names the user gave, which are escaped
//    before they are printed (error.h's escape_controls), so a byte is at most a column.
//  - No line of the result is wider than `width` (when width > indent): a word longer than
//    the room is cut at the width, the one case where a line breaks inside a word.
//  - Words are split at spaces only; runs of spaces between words become one.
//  - Pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace zerodp {

// `words` (one line: no line ends) filled into lines of at most `width` columns. The first
// line starts at column `first` (what stands before it is the caller's); the following lines
// start with `indent` spaces.
std::string fill_words(std::string_view words, std::size_t width, std::size_t indent,
                       std::size_t first = 0);

// `text` with every line wider than `width` filled to it, its continuation lines indented by
// the line's own leading spaces plus `hang`; the other lines as they are.
std::string wrap_long_lines(std::string_view text, std::size_t width, std::size_t hang = 2);

}  // namespace zerodp
