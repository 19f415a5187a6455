// Central finite differences in fp32, for checking hand-written backward passes.
//
// The objective is a scalar computed (in double) from float outputs, usually the probe
// sum(out * probe) whose gradient w.r.t. out is the probe. For each checked element of an
// input, D(h) = (f(x + h) - f(x - h)) / ((x + h) - (x - h)), the denominator taken from the
// rounded floats. The numeric derivative is Richardson's R = (4 D(h/2) - D(h)) / 3, and the
// bound on its error follows from the two sources of error (Taylor: D(h) = f' + c h^2 + d h^4
// + ...):
//  - rounding: each evaluation of f errs by at most objective_error (the caller derives it
//    from the magnitudes of the sums behind f), so D(h) carries at most objective_error / h
//    of it, D(h/2) 2 objective_error / h, and R (4 * 2 + 1) / 3 = 3 objective_error / h;
//  - truncation: R's is -d h^4 / 4, bounded by |D(h) - D(h/2)| / 3 = |c h^2 / 4 + 5 d h^4 / 16|
//    (D(h/2)'s own truncation, which R removes) while the h^4 term is under 4/9 of the h^2
//    term, the regime in which the expansion is used at all.
// Together |R - f'| <= |D(h) - D(h/2)| / 3 + 3 objective_error / h. The analytic gradient's
// own rounding is left out: a backward's sums are of the forward's size, and the numeric
// derivative divides the forward's rounding by h. A check passes when the analytic gradient
// is within that bound of R; FdResult::worst is the largest |analytic - numeric| / bound,
// which must stay below 1.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "zerodp/common/rng.h"

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
  double worst = 0.0;        // worst |analytic - numeric| / bound
  std::size_t worst_at = 0;  // element index
  double analytic = 0.0, numeric = 0.0, bound = 0.0;
};

// (f(x + h) - f(x - h)) / ((x + h) - (x - h)), perturbing x in place and restoring it.
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
  // The most one evaluation of the objective can be off from its exact value, from rounding:
  // derived by the caller (required, > 0).
  double objective_error = 0.0;
  std::vector<std::size_t> which = {};  // elements to check; all when empty
};

// Checks `analytic` (d objective / d x) at the elements `which` (all when empty).
inline FdResult fd_check(const std::string& name, std::span<float> x,
                         std::span<const float> analytic, const std::function<double()>& objective,
                         FdOptions options = {}) {
  const float h = options.h;
  std::vector<std::size_t> which = std::move(options.which);
  if (which.empty()) {
    for (std::size_t i = 0; i < x.size(); ++i) which.push_back(i);
  }
  FdResult r;
  if (!(options.objective_error > 0.0)) {
    r.worst = INFINITY;  // no bound given: fail
    return r;
  }
  for (std::size_t i : which) {
    const double d_h = central_difference(x[i], h, objective);
    const double d_half = central_difference(x[i], h / 2, objective);
    const double numeric = (4.0 * d_half - d_h) / 3.0;
    const double bound = std::fabs(d_h - d_half) / 3.0 + 3.0 * options.objective_error / h;
    const double a = analytic[i];
    const double ratio = std::fabs(a - numeric) / bound;
    if (ratio >= r.worst) r = {ratio, i, a, numeric, bound};
  }
  std::printf(
      "  %-28s worst |difference| / bound %.2e at [%zu] (analytic %+.6e, numeric %+.6e, "
      "bound %.1e)\n",
      name.c_str(), r.worst, r.worst_at, r.analytic, r.numeric, r.bound);
  return r;
}

}  // namespace zerodp::model::testing
