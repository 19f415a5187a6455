// Training progress for people: a bar redrawn in place on a terminal, plain log lines (one
// every log_every steps, no \r, no escape codes) when stdout is a file, a pipe, or the
// terminal of an MPI launcher (mpirun hands ranks a pseudo-terminal that ends in a log), or
// when TERM is "dumb".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace zerodp::cli {

class Progress {
 public:
  // log_every: how often a plain line is printed when stdout is not a terminal.
  // rate_unit: what the rate counts, "tok/s" (the GPT) or "samples/s" (the MLP).
  Progress(std::int64_t total_steps, std::int64_t log_every, std::string rate_unit = "tok/s");
  void step(std::int64_t step, float loss, double per_second, double seconds_left, bool skipped);
  // A line that must not be overwritten (validation loss, a checkpoint).
  void note(const std::string& line);
  void finish();

 private:
  std::int64_t total_, log_every_;
  std::string rate_unit_;
  bool tty_;
  bool bar_drawn_ = false;
};

// Whether stdout is a terminal a person watches: not a file or pipe, not an MPI launcher's.
bool interactive_stdout();

std::string format_duration(double seconds);  // "1:23", "1:02:03"
std::string format_rate(double per_second);   // "12.3k"

}  // namespace zerodp::cli
