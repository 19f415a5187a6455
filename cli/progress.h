// Training progress for people: a bar redrawn in place on a terminal, plain log lines when
// stdout is a file or a pipe (so logs stay readable).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace zerodp::cli {

class Progress {
 public:
  // log_every: how often a plain line is printed when stdout is not a terminal.
  Progress(std::int64_t total_steps, std::int64_t log_every);
  void step(std::int64_t step, float loss, double tokens_per_second, double seconds_left,
            bool skipped);
  // A line that must not be overwritten (validation loss, a checkpoint).
  void note(const std::string& line);
  void finish();

 private:
  std::int64_t total_, log_every_;
  bool tty_;
  bool bar_drawn_ = false;
};

std::string format_duration(double seconds);  // "1:23", "1:02:03"
std::string format_rate(double per_second);   // "12.3k"

}  // namespace zerodp::cli
