// Where a command's words go: out() for its result, err() for its warnings and its one line of
// failure.
//
// Contract: both are the calling thread's, set for the length of one run_command_line() call
// (app.h) and stdout / stderr outside one. A front end that runs several command lines at once
// (the Python module, from several threads) gives each call its own streams, and no call's
// words reach another's, nor the process's file descriptors 1 and 2. Every print of the
// command line goes through them; none writes to stdout or stderr by name.
//
// A front end that holds a file's text in memory (the Python module's dicts for
// --deepspeed-config and --model-config) lends it the same way: while an InlineFiles lives on
// the calling thread, a file flag given the value kInlineFile reads the text lent for that flag,
// and no file is written or read for it.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <string_view>

namespace zerodp::cli {

std::FILE* out();
std::FILE* err();

// The value a file flag takes to read the text an InlineFiles lends for it; the plan names the
// file by it ("<dict>").
inline constexpr std::string_view kInlineFile = "<dict>";

class InlineFiles {
 public:
  // `text_by_flag`: the text of each file flag ("--deepspeed-config"), for this thread.
  explicit InlineFiles(std::map<std::string, std::string> text_by_flag);
  InlineFiles(const InlineFiles&) = delete;
  InlineFiles& operator=(const InlineFiles&) = delete;
  ~InlineFiles();
  // The text lent for `flag` on this thread, or nullptr.
  static const std::string* text_for(std::string_view flag);

 private:
  std::map<std::string, std::string> text_by_flag_;
  const InlineFiles* outer_;
};

}  // namespace zerodp::cli
