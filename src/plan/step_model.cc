#include "zerodp/plan/step_model.h"

#include <algorithm>
#include <cmath>

#include "zerodp/common/error.h"

namespace zerodp::plan {
namespace {

bool finite_non_negative(double x) {
  return std::isfinite(x) && x >= 0;
}

bool usable(double rate) {
  return std::isfinite(rate) && rate > 0;
}

// A ring's seconds: its bytes at the pace of the slowest level it crosses.
double ring_seconds(const StepCollective& c, LinkRates rates) {
  const double bytes = static_cast<double>(c.intra_bytes) + static_cast<double>(c.inter_bytes);
  if (bytes == 0) return 0;
  const double rate = bus_rate(c, rates);
  ZERODP_CHECK(usable(rate));
  return bytes / rate;
}

}  // namespace

double compute_seconds(double flops, double flops_per_second) {
  ZERODP_CHECK(flops >= 0 && usable(flops_per_second));
  return flops / flops_per_second;
}

double bus_rate(const StepCollective& c, LinkRates rates) {
  if (c.intra_bytes == 0 && c.inter_bytes == 0) return 0;
  if (c.inter_bytes == 0) return rates.intra;
  return c.intra_bytes == 0 ? rates.inter : std::min(rates.intra, rates.inter);
}

StepTime StepModel::step_time() const {
  StepTime t;
  t.compute_seconds = forward_seconds + backward_seconds;
  t.comm_seconds = comm_seconds;
  t.hidden_seconds = hidden_seconds;
  t.exposed_seconds = exposed_seconds;
  t.efficiency = efficiency;
  return t;
}

StepModel model_step(double forward_seconds, double backward_seconds,
                     std::vector<StepCollective> collectives, LinkRates rates) {
  ZERODP_CHECK(finite_non_negative(forward_seconds) && finite_non_negative(backward_seconds));
  ZERODP_CHECK(forward_seconds + backward_seconds > 0);
  StepModel m;
  m.forward_seconds = forward_seconds;
  m.backward_seconds = backward_seconds;
  // The compute each phase still has to hide collectives behind.
  double room[2] = {forward_seconds, backward_seconds};
  for (StepCollective& c : collectives) {
    ZERODP_CHECK(c.pieces >= 1);
    TimedCollective t;
    t.seconds = ring_seconds(c, rates);
    ZERODP_CHECK(std::isfinite(t.seconds));
    if (c.overlapped && c.phase != StepPhase::after_backward) {
      double& left = room[c.phase == StepPhase::forward ? 0 : 1];
      const double hideable =
          t.seconds * static_cast<double>(c.pieces - 1) / static_cast<double>(c.pieces);
      t.hidden_seconds = std::min(hideable, left);
      left -= t.hidden_seconds;
    }
    m.comm_seconds += t.seconds;
    m.hidden_seconds += t.hidden_seconds;
    t.collective = std::move(c);
    m.collectives.push_back(std::move(t));
  }
  m.exposed_seconds = m.comm_seconds - m.hidden_seconds;
  const double compute = forward_seconds + backward_seconds;
  m.step_seconds = compute + m.exposed_seconds;
  m.efficiency = std::isfinite(m.step_seconds) ? compute / m.step_seconds
                                               : 1 / (1 + m.exposed_seconds / compute);
  return m;
}

}  // namespace zerodp::plan
