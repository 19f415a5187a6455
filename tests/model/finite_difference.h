// Central finite differences in fp32, for checking hand-written backward passes.
//
// The objective is a scalar computed (in double) from float outputs, usually the probe
// sum(out * probe) whose gradient w.r.t. out is the probe. For each checked element of an
// input, numeric = (f(x + h) - f(x - h)) / ((x + h) - (x - h)) with the denominator taken
// from the rounded floats. Relative difference: |analytic - numeric| / max(|analytic|,
// |numeric|, floor), where floor = 1e-2 * max |analytic| over the tensor keeps near-zero
// gradients from dominating.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "zerodp/rng.h"

namespace zerodp::model::testing {

inline std::vector<float> random_vector(std::size_t n, std::uint64_t seed, double scale,
                                        double mean = 0.0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(mean + scale * counter_normal(seed, 12345, i));
  }
  return v;
}

inline double probe_dot(std::span<const float> out, std::span<const float> probe) {
  double s = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * probe[i];
  return s;
}

struct FdResult {
  double worst = 0.0;        // worst relative difference
  std::size_t worst_at = 0;  // element index
  double analytic = 0.0, numeric = 0.0;
};

// Checks `analytic` (d objective / d x) at the elements `which` (all when empty), perturbing
// x in place and restoring it.
inline double central_difference(float& x, float h, const std::function<double()>& objective) {
  const float saved = x;
  const float plus = saved + h, minus = saved - h;
  x = plus;
  const double f_plus = objective();
  x = minus;
  const double f_minus = objective();
  x = saved;
  return (f_plus - f_minus) / (static_cast<double>(plus) - minus);
}

struct FdOptions {
  float h = 1e-2f;
  bool richardson = false;
  double floor_fraction = 1e-2;
  std::vector<std::size_t> which;  // elements to check; all when empty
};

inline FdResult fd_check(const std::string& name, std::span<float> x,
                         std::span<const float> analytic, const std::function<double()>& objective,
                         FdOptions options = {}) {
  const float h = options.h;
  std::vector<std::size_t> which = std::move(options.which);
  if (which.empty()) {
    for (std::size_t i = 0; i < x.size(); ++i) which.push_back(i);
  }
  double max_abs = 0.0;
  for (float a : analytic) max_abs = std::max(max_abs, static_cast<double>(std::fabs(a)));
  const double floor = std::max(options.floor_fraction * max_abs, 1e-30);
  FdResult r;
  for (std::size_t i : which) {
    double numeric = central_difference(x[i], h, objective);
    if (options.richardson)
      numeric = (4.0 * central_difference(x[i], h / 2, objective) - numeric) / 3.0;
    const double a = analytic[i];
    const double rel = std::fabs(a - numeric) / std::max({std::fabs(a), std::fabs(numeric), floor});
    if (rel >= r.worst) r = {rel, i, a, numeric};
  }
  std::printf("  %-28s worst relative difference %.2e at [%zu] (analytic %+.6e, numeric %+.6e)\n",
              name.c_str(), r.worst, r.worst_at, r.analytic, r.numeric);
  return r;
}

}  // namespace zerodp::model::testing
