// The variants of layers.h's functions that are built twice (model/avx512.h), for the tests
// that hold them to each other bit for bit. Each computes what its layers.h function does.
#pragma once

#include <cstddef>

namespace zerodp::model {

void gelu_forward_keep_slope_baseline(float* out, float* slope, const float* inp, std::size_t N);
// Only where cpu_runs_avx512().
void gelu_forward_keep_slope_avx512(float* out, float* slope, const float* inp, std::size_t N);

}  // namespace zerodp::model
