#include "zerodp/plan/efficiency.h"

#include <algorithm>
#include <cmath>

#include "zerodp/common/error.h"

namespace zerodp::plan {

StepTime step_time(double compute_seconds, std::uint64_t comm_bytes,
                   double bandwidth_bytes_per_second, double overlap) {
  ZERODP_CHECK(std::isfinite(bandwidth_bytes_per_second) && bandwidth_bytes_per_second > 0);
  return step_time_of(compute_seconds, static_cast<double>(comm_bytes) / bandwidth_bytes_per_second,
                      overlap);
}

StepTime step_time_of(double compute_seconds, double comm_seconds, double overlap) {
  ZERODP_CHECK(std::isfinite(compute_seconds) && compute_seconds > 0);
  ZERODP_CHECK(overlap >= 0 && overlap <= 1);
  ZERODP_CHECK(std::isfinite(comm_seconds) && comm_seconds >= 0);
  StepTime t;
  t.compute_seconds = compute_seconds;
  t.comm_seconds = comm_seconds;
  t.hidden_seconds = std::min(overlap * t.comm_seconds, compute_seconds);
  t.exposed_seconds = t.comm_seconds - t.hidden_seconds;
  const double step = compute_seconds + t.exposed_seconds;
  // Near the top of the double range the sum overflows where the ratio does not.
  t.efficiency =
      std::isfinite(step) ? compute_seconds / step : 1 / (1 + t.exposed_seconds / compute_seconds);
  return t;
}

}  // namespace zerodp::plan
