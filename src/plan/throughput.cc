#include "zerodp/plan/throughput.h"

#include <cmath>

#include "zerodp/common/error.h"

namespace zerodp::plan {
namespace {

bool finite_positive(double x) {
  return std::isfinite(x) && x > 0;
}

}  // namespace

double compute_tokens_per_second(double hardware_flops_per_token, double dense_flops, double hfu) {
  ZERODP_CHECK(finite_positive(hardware_flops_per_token) && finite_positive(dense_flops) &&
               finite_positive(hfu));
  return hfu * dense_flops / hardware_flops_per_token;
}

double model_flops_utilisation(double tokens_per_second, double model_flops_per_token,
                               double dense_flops) {
  ZERODP_CHECK(finite_positive(tokens_per_second) && finite_positive(model_flops_per_token) &&
               finite_positive(dense_flops));
  return tokens_per_second * model_flops_per_token / dense_flops;
}

}  // namespace zerodp::plan
