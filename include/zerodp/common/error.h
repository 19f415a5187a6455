// Errors of zerodp, and what the command line makes of them.
//
// Two kinds, because a user must react to them differently:
//  - UsageError: the input is wrong (a value, a combination). The message is one line that
//    names the input and the accepted form; the command line exits with status 2.
//    InvalidArgument is a UsageError about one input, field() naming it.
//  - Error: the input was fine but the run failed (a collective timed out, a file is
//    corrupt, a peer rank died). The message names the cause; the command line exits with 1.
// Broken internal invariants are not errors of either kind: ZERODP_CHECK aborts loudly.
//
// Inputs are named as the library names them, the fields of its option structs
// ("micro_batch", "bucket_bytes"), marked in a message with field_ref(). what() writes each
// as its field; message(name) as a front end's user knows it: the command line passes its
// flags ("--micro-batch"), so its words stay its own while the library speaks of fields.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace zerodp {

// An input named in a message by its field ("micro_batch"): [a-z0-9_] only.
std::string field_ref(std::string_view field);

// How a front end names a field: the command line's flag ("--micro-batch").
using FieldNamer = std::function<std::string(std::string_view field)>;

// The library's own name for a field: the field itself. The namer what() uses.
std::string field_name(std::string_view field);

// `text` (a message, advice, a note) with each field_ref() named by `name`.
std::string name_fields(std::string_view text, const FieldNamer& name);

// What UsageError and Error share: a message that may name inputs with field_ref().
class Failure : public std::runtime_error {
 public:
  explicit Failure(const std::string& text);
  // The message with each field named by `name`.
  std::string message(const FieldNamer& name) const;
  // The message as written, its references unresolved: to carry it on (to other ranks, into
  // another error) without losing them.
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class UsageError : public Failure {
 public:
  explicit UsageError(const std::string& message) : Failure(message) {}
};

// A UsageError about the input `field`.
class InvalidArgument : public UsageError {
 public:
  InvalidArgument(std::string field, const std::string& message)
      : UsageError(message), field_(std::move(field)) {}
  // The field is the one whose reference opens `message` (field_ref("gpus") + ": ...").
  explicit InvalidArgument(const std::string& message);
  // "FIELD: expected EXPECTED, got 'GOT'".
  static InvalidArgument expected(std::string field, std::string_view expected,
                                  std::string_view got);
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

class Error : public Failure {
 public:
  explicit Error(const std::string& message) : Failure(message) {}
};

// Any exception's message as text() keeps it: a Failure's references unresolved, another's
// what().
std::string failure_text(const std::exception& e);

// The text with its control characters escaped (a newline as \n, a tab as \t, others as
// \xHH) and nothing else changed: one line that cannot drive a terminal.
std::string escape_controls(std::string_view text);

// Text the user gave, as an error message quotes it: in single quotes, with control characters
// escaped (a newline as \n, others as \xHH), so that the message stays one line.
std::string quote(std::string_view text);

// `text` unchanged up to `max_chars` bytes; beyond, cut there (on a character boundary) with
// "... (N bytes)". For text that is already safe to print (JSON's own escaping), only long.
std::string cut_long(std::string_view text, std::size_t max_chars = 64);

// Text from a file (a key, a value, a name), as a message shows it: quoted as quote() does and,
// where its escaped form is longer than `max_chars` characters, cut before (on a character
// boundary) with "..." and its full length in bytes, so that a megabyte in a config, or a key of
// control bytes that escape to four characters each, never becomes a long error line.
std::string shown(std::string_view text, std::size_t max_chars = 64);

// Text the user gave, as an output line (not an error) shows it: as it is, unless it holds a
// control character (a newline, an escape code), then quoted as quote() does, so that a path
// can neither break a log line nor drive the terminal.
std::string printable(std::string_view text);
// The same, and shown() as a message would show it when longer than `max_chars` as printed.
std::string printable(std::string_view text, std::size_t max_chars);

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
