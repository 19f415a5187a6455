// Errors of zerodp, and what the command line makes of them.
//
// Two kinds, because a user must react to them differently:
//  - UsageError: the input is wrong (a flag, a value, a combination). The message is one
//    line that names the flag and the accepted form; the command line exits with status 2.
//  - Error: the input was fine but the run failed (a collective timed out, a file is
//    corrupt, a peer rank died). The message names the cause; the command line exits with 1.
// Broken internal invariants are not errors of either kind: ZERODP_CHECK aborts loudly.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace zerodp {

class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// The text with its control characters escaped (a newline as \n, a tab as \t, others as
// \xHH) and nothing else changed: one line that cannot drive a terminal.
std::string escape_controls(std::string_view text);

// Text the user gave, as an error message quotes it: in single quotes, with control characters
// escaped (a newline as \n, others as \xHH), so that the message stays one line.
std::string quote(std::string_view text);

// Text the user gave, as an output line (not an error) shows it: as it is, unless it holds a
// control character (a newline, an escape code), then quoted as quote() does, so that a path
// can neither break a log line nor drive the terminal.
std::string printable(std::string_view text);

[[noreturn]] void check_failed(const char* condition, const char* file, int line,
                               const std::string& detail);

}  // namespace zerodp

// An invariant of the code, not of the input: failing it is a bug in zerodp.
#define ZERODP_CHECK(cond)                                              \
  do {                                                                  \
    if (!(cond)) ::zerodp::check_failed(#cond, __FILE__, __LINE__, {}); \
  } while (0)
#define ZERODP_CHECK_MSG(cond, detail)                                      \
  do {                                                                      \
    if (!(cond)) ::zerodp::check_failed(#cond, __FILE__, __LINE__, detail); \
  } while (0)
