// When a run has diverged (zerodp/run/training.h, divergence()): the rule a training run stops
// by, on the step results each precision meets. The command-line tests drive a real run to
// divergence with --lr 1e30; these hold the cases a real run reaches only rarely, such as fp16
// skipping step after step at its smallest loss scale.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "zerodp/run/training.h"

namespace zerodp::run {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kMinScale = 1.0f;

zero::StepResult step(float loss, float grad_norm, bool skipped, float loss_scale) {
  zero::StepResult s;
  s.loss = loss;
  s.grad_norm = grad_norm;
  s.skipped = skipped;
  s.loss_scale = loss_scale;
  return s;
}

bool holds(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Divergence, AFiniteStepIsNotDivergenceInAnyPrecision) {
  for (const DType p : {DType::bf16, DType::f16, DType::f32}) {
    int skips = 0;
    EXPECT_EQ(divergence(step(2.5f, 0.7f, false, 65536.0f), p, kMinScale, skips), "");
    EXPECT_EQ(skips, 0);
  }
}

TEST(Divergence, ALossThatIsNotFiniteIsDivergenceInEveryPrecision) {
  for (const DType p : {DType::bf16, DType::f16, DType::f32}) {
    for (const float loss : {kNaN, kInf, -kInf}) {
      int skips = 0;
      const std::string why = divergence(step(loss, 0.0f, true, 1024.0f), p, kMinScale, skips);
      EXPECT_TRUE(holds(why, "loss ")) << why;
    }
  }
}

TEST(Divergence, WithoutALossScaleAGradientThatIsNotFiniteIsDivergence) {
  for (const float norm : {kNaN, kInf}) {
    int skips = 0;
    const std::string why =
        divergence(step(3.0f, norm, false, 1.0f), DType::bf16, kMinScale, skips);
    EXPECT_TRUE(holds(why, "bf16 has no loss scale to lower")) << why;
  }
  int skips = 0;
  EXPECT_NE(divergence(step(3.0f, 0.5f, true, 1.0f), DType::bf16, kMinScale, skips), "");
}

TEST(Divergence, Fp16SkipsAreDivergenceOnlyInARowAtTheSmallestScale) {
  int skips = 0;
  // Skips above the smallest scale are the scaler doing its work: never divergence.
  for (int i = 0; i < 3 * Training::kMaxSkipsAtMinScale; ++i) {
    EXPECT_EQ(divergence(step(3.0f, kInf, true, 2.0f), DType::f16, kMinScale, skips), "");
  }
  EXPECT_EQ(skips, 0);
  // At the smallest scale: one short of the bound, then a good step resets the count.
  for (int i = 0; i + 1 < Training::kMaxSkipsAtMinScale; ++i) {
    EXPECT_EQ(divergence(step(3.0f, kInf, true, kMinScale), DType::f16, kMinScale, skips), "");
  }
  EXPECT_EQ(skips, Training::kMaxSkipsAtMinScale - 1);
  EXPECT_EQ(divergence(step(3.0f, 0.5f, false, kMinScale), DType::f16, kMinScale, skips), "");
  EXPECT_EQ(skips, 0);
  // The bound's worth in a row is divergence, on the step that reaches it.
  std::string why;
  for (int i = 0; i < Training::kMaxSkipsAtMinScale; ++i) {
    why = divergence(step(3.0f, kInf, true, kMinScale), DType::f16, kMinScale, skips);
    EXPECT_EQ(why.empty(), i + 1 < Training::kMaxSkipsAtMinScale) << i;
  }
  EXPECT_TRUE(holds(why, std::to_string(Training::kMaxSkipsAtMinScale) +
                             " steps in a row overflowed at the smallest loss scale"))
      << why;
}

}  // namespace
}  // namespace zerodp::run
