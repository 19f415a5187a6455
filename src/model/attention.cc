// Causal self-attention, one (batch, head) pair at a time, each product a GEMM over strided
// views of the q, k, v columns: for head h of sample b, with HS = C / NH,
//   q, k, v  = inp[b, :, h*HS + {0, C, 2C} ...]      [T, HS] each, row stride 3C
//   att      = softmax_causal(q k^T / sqrt(HS))       [T, T]
//   out      = att v                                  [T, HS] at out[b, :, h*HS ...], stride C
// The GEMMs compute the whole T x T square; the softmax then zeroes the future, so att v
// needs no mask. That wastes the upper triangle's flops, a small share at these sizes.
#include <cmath>

#include "model/gemm.h"
#include "model/layers.h"
#include "model/simd_math.h"

namespace zerodp::model {

void attention_forward(float* out, float* att, const float* inp, std::size_t B, std::size_t T,
                       std::size_t C, std::size_t NH) {
  const std::size_t C3 = 3 * C, HS = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < NH; ++h) {
      const float* q = inp + b * T * C3 + h * HS;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* a = att + (b * NH + h) * T * T;
      gemm(Trans::no, Trans::yes, T, T, HS, scale, q, C3, k, C3, 0.0f, a, T);
      for (std::size_t t = 0; t < T; ++t) {
        float* row = a + t * T;
        const std::size_t n = t + 1;  // positions 0..t are visible
        const float maxv = lane_max(n, row);
        for (std::size_t t2 = 0; t2 < n; ++t2) row[t2] = exp_approx(row[t2] - maxv);
        const float inv = 1.0f / lane_sum(n, [row](std::size_t t2) { return row[t2]; });
        for (std::size_t t2 = 0; t2 < n; ++t2) row[t2] *= inv;
        for (std::size_t t2 = n; t2 < T; ++t2) row[t2] = 0.0f;
      }
      gemm(Trans::no, Trans::no, T, HS, T, 1.0f, a, T, v, C3, 0.0f, out + b * T * C + h * HS, C);
    }
  }
}

void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp,
                        const float* att, std::size_t B, std::size_t T, std::size_t C,
                        std::size_t NH) {
  const std::size_t C3 = 3 * C, HS = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  float* datt = scratch;  // [T, T], becomes d(scores) in place
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < NH; ++h) {
      const float* q = inp + b * T * C3 + h * HS;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* dq = dinp + b * T * C3 + h * HS;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* a = att + (b * NH + h) * T * T;
      const float* dout_h = dout + b * T * C + h * HS;
      gemm(Trans::no, Trans::yes, T, T, HS, 1.0f, dout_h, C, v, C3, 0.0f, datt, T);  // dout v^T
      gemm(Trans::yes, Trans::no, T, HS, T, 1.0f, a, T, dout_h, C, 0.0f, dv, C3);    // att^T dout
      // Softmax backward, row by row: dscore = att * (datt - sum(att * datt)), times the scale
      // the forward applied to the scores.
      for (std::size_t t = 0; t < T; ++t) {
        const float* a_row = a + t * T;
        float* d_row = datt + t * T;
        const std::size_t n = t + 1;
        const float dot = lane_sum(n, [=](std::size_t t2) { return a_row[t2] * d_row[t2]; });
        for (std::size_t t2 = 0; t2 < n; ++t2) d_row[t2] = a_row[t2] * (d_row[t2] - dot) * scale;
        for (std::size_t t2 = n; t2 < T; ++t2) d_row[t2] = 0.0f;
      }
      gemm(Trans::no, Trans::no, T, HS, T, 1.0f, datt, T, k, C3, 0.0f, dq, C3);   // dscore k
      gemm(Trans::yes, Trans::no, T, HS, T, 1.0f, datt, T, q, C3, 0.0f, dk, C3);  // dscore^T q
    }
  }
}

}  // namespace zerodp::model
