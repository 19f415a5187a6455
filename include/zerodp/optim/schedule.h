// The learning-rate schedule: linear warm-up, then cosine decay.
//
// Contract: pure; the same step gives the same rate on every rank.
#pragma once

#include <cstdint>

namespace zerodp::optim {

// Learning rate at optimizer step t (1-based) of `steps`: linear warm-up over `warmup` steps
// to `peak`, then cosine decay to peak * min_ratio at the last step.
float lr_at(std::int64_t t, std::int64_t steps, std::int64_t warmup, float peak,
            float min_ratio = 0.1f);

}  // namespace zerodp::optim
