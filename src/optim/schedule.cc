#include <algorithm>
#include <cmath>

#include "zerodp/optim/schedule.h"

namespace zerodp::optim {

float lr_at(std::int64_t t, std::int64_t steps, std::int64_t warmup, float peak, float min_ratio) {
  if (warmup > 0 && t <= warmup) return peak * float(t) / float(warmup);
  const std::int64_t decay_steps = std::max<std::int64_t>(1, steps - warmup);
  const double progress = std::clamp(double(t - warmup) / double(decay_steps), 0.0, 1.0);
  const double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
  return float(peak * (min_ratio + (1.0 - min_ratio) * cosine));
}

}  // namespace zerodp::optim
