// AdamW on an fp32 shard: the optimizer side of mixed-precision training.
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

}  // namespace zerodp::optim
