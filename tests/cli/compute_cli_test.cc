// `--compute`: what train and measure multiply their products in, as a user meets it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"
#include "zerodp/model/gemm.h"

namespace zerodp {
namespace {

using testing::expect_refused;
using testing::run_zerodp;
using testing::weights_of;

const std::string kComputeRun =
    "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 --ranks 2 --out '' ";

// Stages 0-3 are one optimisation in bf16 compute too: the same weights, bit for bit, for the
// same ranks and seed; each run's peak is its prediction, scratch included; and the weights
// differ from fp32 compute's, so bf16 was used.
TEST(ComputeCli, Bf16EveryStageEndsWithTheSameWeightsAndItsPredictedPeak) {
  std::string hash;
  for (int stage = 0; stage <= 3; ++stage) {
    const auto r = run_zerodp(kComputeRun + "--steps 3 --compute bf16 --json --stage " +
                              std::to_string(stage));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["model"]["compute"], "bf16");
    EXPECT_EQ(j["peak_bytes"], j["predicted_peak_bytes"]) << "stage " << stage;
    if (stage == 0) hash = weights_of(r);
    EXPECT_EQ(weights_of(r), hash) << "stage " << stage;
  }
  const auto fp32 = run_zerodp(kComputeRun + "--steps 3 --compute fp32 --json");
  ASSERT_EQ(fp32.status, 0) << fp32.err;
  EXPECT_EQ(nlohmann::json::parse(fp32.out)["model"]["compute"], "fp32");
  EXPECT_NE(weights_of(fp32), hash);
}

// A bf16 run resumed from its checkpoint goes on in bf16 (the checkpoint records it) and ends
// with the bits of the run never interrupted.
TEST(ComputeCli, Bf16ResumesBitwise) {
  const std::string dir = testing::fresh_path("bf16_resume");
  const auto first = run_zerodp(kComputeRun + "--steps 4 --compute bf16 --save-every 2 " +
                                "--save-dir '" + dir + "' --json");
  ASSERT_EQ(first.status, 0) << first.err;
  const auto resumed =
      run_zerodp(kComputeRun + "--steps 4 --resume '" + dir + "/step-00000002' --json");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(nlohmann::json::parse(resumed.out)["model"]["compute"], "bf16");
  EXPECT_EQ(weights_of(resumed), weights_of(first));
  // Another compute on resume is allowed (the state is the same) and said.
  const auto other =
      run_zerodp(kComputeRun + "--steps 3 --compute fp32 --resume '" + dir + "/step-00000002'");
  ASSERT_EQ(other.status, 0) << other.err;
  EXPECT_TRUE(
      testing::has(other.out,
                   "resume: --compute fp32 (the checkpoint's run: bf16): the products multiply in "
                   "fp32 from the next step"))
      << other.out;
}

// The header says which compute runs and, for auto, why.
TEST(ComputeCli, TheHeaderSaysWhichComputeAndWhy) {
  // The kernel is oneDNN's where this CPU multiplies bf16 (and oneDNN has the kernel), the
  // emulation elsewhere.
  const bool native = model::bf16_kernel() == model::GemmKernel::onednn;
  const std::string bf16_line = std::string("compute: bf16 products (bf16 inputs, fp32 sums), ") +
                                (native ? "oneDNN's bf16 matmul" : "emulated");
  const auto bf16 = run_zerodp(kComputeRun + "--steps 1 --compute bf16");
  ASSERT_EQ(bf16.status, 0) << bf16.err;
  EXPECT_TRUE(testing::has(bf16.out, "\n" + bf16_line + "\n")) << bf16.out;
  const auto fp16 = run_zerodp(kComputeRun + "--steps 1 --precision fp16");
  ASSERT_EQ(fp16.status, 0) << fp16.err;
  EXPECT_TRUE(
      testing::has(fp16.out, "\ncompute: fp32 products (auto: the 16-bit format is fp16)\n"))
      << fp16.out;
  // auto (with bf16 the 16-bit format) is bf16 where the CPU multiplies bf16; elsewhere fp32,
  // emulated bf16 products being slower than fp32's, for a reason that depends on the CPU.
  const auto autos = run_zerodp(kComputeRun + "--steps 1");
  ASSERT_EQ(autos.status, 0) << autos.err;
  EXPECT_TRUE(testing::has(
      autos.out, native ? "\n" + bf16_line +
                              " (auto: the 16-bit format is bf16 and this CPU multiplies bf16)\n"
                        : std::string("\ncompute: fp32 products (auto: ")))
      << autos.out;
  const auto measured = run_zerodp(
      "measure --model gpt --layers 1 --heads 2 --hidden 32 --seq-len 16 --ranks 2 --steps 1 "
      "--compute "
      "bf16 --json");
  ASSERT_EQ(measured.status, 0) << measured.err;
  const auto j = nlohmann::json::parse(measured.out);
  EXPECT_EQ(j["compute"], "bf16");
  EXPECT_EQ(j["per_rank"][0]["peak_bytes"], j["predicted"]["peak_bytes"]);
}

TEST(ComputeCli, BadInputIsOneLineNamingTheFlag) {
  expect_refused(kComputeRun + "--steps 1 --compute fp8", "--compute: expected auto, fp32 or bf16");
  expect_refused(kComputeRun + "--steps 1 --compute BF16",
                 "--compute: expected auto, fp32 or bf16");
  expect_refused("train --model mlp --steps 1 --compute bf16", "--compute");
  expect_refused("measure --model mlp --steps 1 --compute fp32", "--compute");
}

}  // namespace
}  // namespace zerodp
