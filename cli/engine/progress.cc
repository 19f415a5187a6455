#include "progress.h"
#include "output.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "zerodp/run/launch.h"

namespace zerodp::cli {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

std::string format_rate(double v) {
  char buf[32];
  if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

bool interactive_stdout() {
  if (isatty(fileno(out())) != 1) return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  // Under an MPI launcher the ranks' output ends in the launcher's log.
  return !run::started_by_mpi_launcher();
}

Progress::Progress(std::int64_t total_steps, std::int64_t log_every, std::string rate_unit)
    : total_(total_steps),
      log_every_(log_every),
      rate_unit_(std::move(rate_unit)),
      tty_(interactive_stdout()) {}

void Progress::step(std::int64_t step, float loss, double per_second, double seconds_left,
                    bool skipped) {
  const std::string rate = format_rate(per_second);
  const std::string eta = format_duration(seconds_left);
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * step / std::max<std::int64_t>(1, total_));
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::fprintf(out(), "\r\033[Kstep %lld/%lld [%s] loss %.4f%s | %s %s | ETA %s", (long long)step,
                 (long long)total_, bar.c_str(), loss, skipped ? " (skipped)" : "", rate.c_str(),
                 rate_unit_.c_str(), eta.c_str());
    bar_drawn_ = true;
  } else if (step % log_every_ == 0 || step == total_ || step == 1) {
    std::fprintf(out(), "step %lld/%lld  loss %.4f%s  %s %s  ETA %s\n", (long long)step,
                 (long long)total_, loss, skipped ? " (skipped: fp16 overflow)" : "", rate.c_str(),
                 rate_unit_.c_str(), eta.c_str());
  }
  std::fflush(out());
}

void Progress::note(const std::string& line) {
  if (tty_ && bar_drawn_) std::fprintf(out(), "\r\033[K");
  std::fprintf(out(), "%s\n", line.c_str());
  std::fflush(out());
}

void Progress::finish() {
  if (tty_ && bar_drawn_) std::fprintf(out(), "\n");
  bar_drawn_ = false;
  std::fflush(out());
}

}  // namespace zerodp::cli
