// The GPT in bf16 compute: its gradients against fp32 compute's, and the scratch of each thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

#include "model/finite_difference.h"
#include "model/gpt_testing.h"
#include "testing/tolerance.h"
#include "zerodp/model/gpt.h"

namespace zerodp::model {
namespace {

using gpt_testing::begin_windows;
using gpt_testing::config;
using gpt_testing::random_windows;
using testing::random_vector;

// bf16 compute against fp32 compute, on the same parameters and samples: the loss and every
// tensor's gradient, normwise. Each product's operands are rounded by at most u_b = 2^-8, so
// each product is off by at most about 2 u_b of its |terms|; to first order the errors of the
// products a gradient passes through add up. From the loss to a block's first weight, and
// back, a gradient passes through at most P = 6 L + 2 products (six a block, the LM head's
// forward and backward) twice, so 2 P (2 u_b) bounds it when no layer amplifies an error: a
// model, not a proof (LayerNorm divides by a row's spread), checked here on a small GPT.
TEST(GptModel, Bf16ComputeGradientsStayWithinTheirRoundingOfFp32s) {
  GptConfig c = config(2, 2, 16, 8);
  GptModel fp32(c);
  c.compute = Compute::bf16;
  GptModel bf16(c);
  std::vector<float> params(fp32.param_count());
  init_all(fp32, params, 3);
  const auto noise = random_vector(params.size(), 4, 0.1);
  for (std::size_t i = 0; i < params.size(); ++i) params[i] += noise[i];
  const auto windows = random_windows(3, 8, 5);
  begin_windows(fp32, windows, 3);
  begin_windows(bf16, windows, 3);
  std::vector<float> g32(params.size(), 0.0f), g16(params.size(), 0.0f);
  const float l32 = forward_backward_all(fp32, params, g32);
  const float l16 = forward_backward_all(bf16, params, g16);
  const double products = 2.0 * (6 * c.layers + 2);
  const double bound = products * 2 * tolerance::kBf16UnitRoundoff;
  EXPECT_NE(l32, l16);  // the products did round
  EXPECT_LE(std::fabs(l16 - l32), bound * l32);
  double worst = 0;
  for (const auto& u : fp32.units()) {
    for (std::size_t t = 0; t < u.tensors.size(); ++t) {
      const auto [begin, end] = gpt_testing::tensor_range(u, t);
      double diff = 0, norm = 0;
      for (std::size_t i = begin; i < end; ++i) {
        diff += (double{g16[i]} - g32[i]) * (double{g16[i]} - g32[i]);
        norm += double{g32[i]} * g32[i];
      }
      const double relative = std::sqrt(diff / norm);
      EXPECT_LE(relative, bound) << u.tensors[t].name;
      worst = std::max(worst, relative);
    }
  }
  std::printf("  loss %.6f fp32, %.6f bf16; worst tensor |g16 - g32| / |g32| %.2e, bound %.2e\n",
              l32, l16, worst, bound);
}

// The scratch each thread's products round into holds every product of these shapes: each
// where another term of GptConfig::gemm_scratch_floats is the largest (the LM head's V C, the
// MLP's 4 C^2, the rows' 4 R C), with micro-batches the threads split unevenly. gemm() stops
// the process if a product does not fit.
TEST(GptModel, Bf16ScratchHoldsEveryProductOfEachThread) {
  for (const auto& [hidden, seq_len, samples] :
       {std::tuple{8, 4, 3}, std::tuple{128, 4, 1}, std::tuple{16, 32, 5}}) {
    for (const int threads : {1, 2, 3}) {
      GptConfig c = config(1, 2, hidden, seq_len);
      c.compute = Compute::bf16;
      GptModel model(c);
      model.set_threads(threads);
      std::vector<float> params(model.param_count()), grads(params.size(), 0.0f);
      init_all(model, params, 1);
      begin_windows(model, random_windows(std::size_t(samples), std::size_t(seq_len), 2),
                    std::size_t(samples));
      const float loss = forward_backward_all(model, params, grads);
      EXPECT_NEAR(loss, std::log(256.0), 0.1) << hidden << " " << threads;
      // What bf16 adds to the same model in fp32: one scratch a thread, for the rows of the
      // thread with the most samples.
      GptConfig c32 = c;
      c32.compute = Compute::fp32;
      GptModel model32(c32);
      model32.set_threads(threads);
      begin_windows(model32, random_windows(std::size_t(samples), std::size_t(seq_len), 2),
                    std::size_t(samples));
      const std::size_t per_thread = (std::size_t(samples) + threads - 1) / std::size_t(threads);
      EXPECT_EQ(
          model.activation_bytes() - model32.activation_bytes(),
          4 * std::size_t(threads) * c.gemm_scratch_floats(per_thread * std::size_t(seq_len)));
      EXPECT_EQ(c32.gemm_scratch_floats(per_thread * std::size_t(seq_len)), 0u);
    }
  }
}

}  // namespace
}  // namespace zerodp::model
