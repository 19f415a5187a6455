#include "zerodp/optim/loss_scaler.h"

#include <algorithm>

namespace zerodp::optim {

LossScaler::LossScaler(const LossScaleConfig& config, bool dynamic)
    : config_(config), dynamic_(dynamic), scale_(dynamic ? config.initial : 1.0f) {}

bool LossScaler::update(bool overflow) {
  if (!overflow) {
    if (dynamic_ && ++good_steps_ >= config_.growth_interval) {
      scale_ *= 2.0f;
      good_steps_ = 0;
    }
    return false;
  }
  good_steps_ = 0;
  if (dynamic_) scale_ = std::max(config_.min_scale, scale_ * 0.5f);
  return true;
}

}  // namespace zerodp::optim
