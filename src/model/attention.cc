// Causal self-attention, one (batch, head) pair at a time, each product a GEMM over strided
// views of the q, k, v columns: for head h of sample b, with HS = C / NH,
//   q, k, v  = inp[b, :, h*HS + {0, C, 2C} ...]      [T, HS] each, row stride 3C
//   att      = softmax_causal(q k^T / sqrt(HS))       [T, T]
//   out      = att v                                  [T, HS] at out[b, :, h*HS ...], stride C
// Causality skips work: the rows are taken in blocks of kBlock queries, and a block's products
// stop at the last key it sees (scores, att v, dq) or start at the first query that sees it
// (dv, dk), so about (1 + 1/nb)/2 of the T x T square is computed with nb blocks. Inside the
// diagonal blocks the GEMMs still compute the future; the softmax (and its backward) sets it
// to zero. The sums that remain are the whole square's minus terms that are exact zeros at the
// start or the end of each sum (the BLAS may still round a smaller product differently).
#include <algorithm>
#include <cmath>

#include "model/simd_math.h"
#include "zerodp/model/gemm.h"
#include "zerodp/model/layers.h"

namespace zerodp::model {
namespace {
// Queries per block: smaller skips more of the square, with more and smaller GEMMs. At T = 128,
// HS = 64 on one core, 64 took 15 % less time than the whole square, 32 10 %, 16 17 % more.
constexpr std::size_t kBlock = 64;
}  // namespace

void attention_forward(float* out, float* att, const float* inp, std::size_t B, std::size_t T,
                       std::size_t C, std::size_t NH, const GemmCompute& how) {
  const std::size_t C3 = 3 * C, HS = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < NH; ++h) {
      const float* q = inp + b * T * C3 + h * HS;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* a = att + (b * NH + h) * T * T;
      // Scores of queries [i0, i0 + m) against keys [0, i0 + m).
      for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
        const std::size_t m = std::min(kBlock, T - i0);
        gemm(how, Trans::no, Trans::yes, m, i0 + m, HS, scale, q + i0 * C3, C3, k, C3, 0.0f,
             a + i0 * T, T);
      }
      for (std::size_t t = 0; t < T; ++t) {
        float* row = a + t * T;
        const std::size_t n = t + 1;  // positions 0..t are visible
        const float maxv = lane_max(n, row);
        for (std::size_t t2 = 0; t2 < n; ++t2) row[t2] = exp_approx(row[t2] - maxv);
        const float inv = 1.0f / lane_sum(n, [row](std::size_t t2) { return row[t2]; });
        for (std::size_t t2 = 0; t2 < n; ++t2) row[t2] *= inv;
        for (std::size_t t2 = n; t2 < T; ++t2) row[t2] = 0.0f;
      }
      for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
        const std::size_t m = std::min(kBlock, T - i0);
        gemm(how, Trans::no, Trans::no, m, HS, i0 + m, 1.0f, a + i0 * T, T, v, C3, 0.0f,
             out + (b * T + i0) * C + h * HS, C);
      }
    }
  }
}

void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp,
                        const float* att, std::size_t B, std::size_t T, std::size_t C,
                        std::size_t NH, const GemmCompute& how) {
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
      for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
        const std::size_t m = std::min(kBlock, T - i0);
        // datt = dout v^T for queries [i0, i0 + m) and keys [0, i0 + m).
        gemm(how, Trans::no, Trans::yes, m, i0 + m, HS, 1.0f, dout_h + i0 * C, C, v, C3, 0.0f,
             datt + i0 * T, T);
        // dv = att^T dout for keys [i0, i0 + m), over the queries [i0, T) that see them.
        gemm(how, Trans::yes, Trans::no, m, HS, T - i0, 1.0f, a + i0 * T + i0, T, dout_h + i0 * C,
             C, 0.0f, dv + i0 * C3, C3);
      }
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
      for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
        const std::size_t m = std::min(kBlock, T - i0);
        // dq = dscore k for queries [i0, i0 + m); dk = dscore^T q for keys [i0, i0 + m).
        gemm(how, Trans::no, Trans::no, m, HS, i0 + m, 1.0f, datt + i0 * T, T, k, C3, 0.0f,
             dq + i0 * C3, C3);
        gemm(how, Trans::yes, Trans::no, m, HS, T - i0, 1.0f, datt + i0 * T + i0, T, q + i0 * C3,
             C3, 0.0f, dk + i0 * C3, C3);
      }
    }
  }
}

}  // namespace zerodp::model
