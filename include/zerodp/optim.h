// The optimizer side of mixed-precision training: AdamW on an fp32 shard, and the dynamic
// loss scale that fp16 needs.
//
// adamw_update() sees spans of floats and nothing else: not the rank, not the stage, not the
// shard's place in the model. Given the same inputs it produces the same bits, so a shard
// updated on one rank equals the same elements updated by a rank that holds everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace zerodp::optim {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;  // GPT-style; 0.999 suits short runs less well
  float eps = 1e-8f;
  float weight_decay = 0.1f;  // decoupled: applied to the parameter, not the gradient
};

// One AdamW step, t = 1, 2, ... (for bias correction), on elements [0, param.size()):
//   g = grad[i] * grad_mul;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   param -= lr * ( m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd * param )
// grad_mul folds loss-scale removal and gradient clipping into one factor.
// All spans have the same length.
void adamw_update(std::span<float> param, std::span<const float> grad, float grad_mul,
                  std::span<float> m, std::span<float> v, float lr, std::int64_t t,
                  const AdamWConfig& config);

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

namespace zerodp::optim {

// Learning rate at optimizer step t (1-based) of `steps`: linear warm-up over `warmup` steps
// to `peak`, then cosine decay to peak * min_ratio at the last step.
float lr_at(std::int64_t t, std::int64_t steps, std::int64_t warmup, float peak,
            float min_ratio = 0.1f);

}  // namespace zerodp::optim
