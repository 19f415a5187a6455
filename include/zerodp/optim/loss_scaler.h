// The dynamic loss scale that fp16 training needs, the same on every rank.
//
// Contract: update() is a pure function of the scaler's state and the overflow flag, so ranks
// that see the same flags (one all-reduce carries them) keep the same scale.
#pragma once

namespace zerodp::optim {

// Dynamic loss scaling for fp16 (bf16 and fp32 need none: their range is fp32's).
// An overflow anywhere skips the step on every rank and halves the scale; after
// growth_interval good steps in a row the scale doubles.
struct LossScaleConfig {
  float initial = 65536.0f;
  float min_scale = 1.0f;
  int growth_interval = 1000;
};

class LossScaler {
 public:
  LossScaler() : LossScaler(LossScaleConfig{}, false) {}
  LossScaler(const LossScaleConfig& config, bool dynamic);
  float scale() const { return scale_; }
  bool dynamic() const { return dynamic_; }
  // Call once per step with whether any rank saw a non-finite gradient. Returns true when
  // the step must be skipped.
  bool update(bool overflow);
  int good_steps() const { return good_steps_; }
  // For resuming a run.
  void restore(float scale, int good_steps) { scale_ = scale, good_steps_ = good_steps; }

 private:
  LossScaleConfig config_;
  bool dynamic_;
  float scale_;
  int good_steps_ = 0;
};

}  // namespace zerodp::optim
