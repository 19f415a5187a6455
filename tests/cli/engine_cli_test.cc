// `zerodp train` and `zerodp measure` as a user runs them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

using testing::run_zerodp;

TEST(MeasureCli, AllStagesShowTheSeedsPictureMeasured) {
  // 4 layers of 32x32: Φ = 4224, divisible by N = 4, so measured equals predicted exactly.
  const auto r = run_zerodp("measure --all-stages --ranks 4 --params 4224 --steps 2");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* text : {"16Φ", "4Φ + 12Φ/N", "2Φ + 14Φ/N", "16Φ/N", "predicted (planner, ring)",
                           "counted, sent (backend)", "exposed comm"}) {
    EXPECT_TRUE(r.has(text)) << text << "\n" << r.out;
  }
  // Bytes per parameter at N = 4: 16, 4 + 3, 2 + 3.5, 4; communication ratio 1.5.
  std::string squeezed;
  for (char c : r.out) {
    if (c != ' ' || squeezed.empty() || squeezed.back() != ' ') squeezed += c;
  }
  EXPECT_NE(squeezed.find("bytes per parameter 16.000 7.000 5.500 4.000"), std::string::npos)
      << r.out;
  EXPECT_NE(squeezed.find("counted sent / DP 1.000 1.000 1.000 1.500"), std::string::npos) << r.out;
  EXPECT_NE(squeezed.find("measured - predicted, worst rank 0 0 0 0"), std::string::npos) << r.out;
  EXPECT_NE(squeezed.find("counted sent - predicted, worst rank 0 0 0 0"), std::string::npos)
      << r.out;
  // Nothing computed from a formula is called measured.
  EXPECT_EQ(squeezed.find("measured (bytes sent)"), std::string::npos) << r.out;
}

TEST(MeasureCli, JsonContract) {
  const auto r = run_zerodp("measure --stage 2 --ranks 3 --params 4224 --steps 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stage"], 2);
  EXPECT_EQ(j["ranks"], 3);
  EXPECT_EQ(j["params"], 4224);
  EXPECT_EQ(j["predicted"]["model_state_bytes"], 2 * 4224 + 14 * 1408);
  ASSERT_EQ(j["per_rank"].size(), 3u);
  for (const auto& rank : j["per_rank"]) {
    EXPECT_EQ(rank["model_state_bytes"], rank["predicted_model_state_bytes"]);
    EXPECT_EQ(rank["comm_sent_bytes"], rank["predicted_comm_bytes"]);
    EXPECT_EQ(rank["comm_received_bytes"], rank["predicted_comm_bytes"]);
    EXPECT_EQ(rank["comm_ring_bytes"], rank["predicted_comm_bytes"]);
    EXPECT_GT(rank["peak_bytes"].get<std::uint64_t>(),
              rank["model_state_bytes"].get<std::uint64_t>());
    EXPECT_EQ(rank["peak_bytes"], rank["predicted_peak_bytes"]);
  }
  EXPECT_EQ(j["predicted"]["peak_bytes"], j["per_rank"][0]["peak_bytes"]);
  // Cell G, measured: efficiency = compute / (compute + exposed), from the same medians.
  const auto& t = j["timing"];
  const double compute = t["compute_seconds"], exposed = t["exposed_seconds"];
  EXPECT_GT(compute, 0.0);
  EXPECT_GE(exposed, 0.0);
  EXPECT_DOUBLE_EQ(t["efficiency"].get<double>(), compute / (compute + exposed));
  EXPECT_NEAR(t["step_seconds"].get<double>(), compute + exposed, 1e-12);
  EXPECT_FALSE(j.contains("wire"));  // no cluster host here
  // The step predicted before it ran, from the kernel rates each rank measured alone: on one
  // host no collective crosses a link and the pace beside the link was not measured. Each rank
  // has its own rates, so at every collective the replay waits for the slowest: the step is at
  // least the slowest rank's compute and at most every rank's compute one after another.
  const auto& rates = t["kernel_rates"];
  for (const char* key :
       {"forward_flops_per_second", "backward_flops_per_second", "optimizer_params_per_second"}) {
    EXPECT_GT(rates[key].get<double>(), 0.0) << key;
  }
  EXPECT_EQ(rates["beside_link"], 1.0);
  const auto& p = t["predicted_from_rates"];
  ASSERT_TRUE(p.is_object());
  const double step = p["step_seconds"];
  EXPECT_GT(step, 0.0);
  EXPECT_EQ(p["comm_seconds"], 0.0);
  const double slowest = p["compute_seconds"];
  EXPECT_GE(step, slowest * (1 - 1e-12));
  EXPECT_LE(step, 3 * slowest);
  EXPECT_NEAR(p["step_error"].get<double>(), step / t["step_seconds"].get<double>() - 1.0, 1e-12);
}

// With one rank nothing waits for anyone: the step predicted from its rates is its compute.
TEST(MeasureCli, OneRanksStepFromRatesIsItsCompute) {
  const auto r = run_zerodp("measure --stage 2 --ranks 1 --params 4224 --steps 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto p = nlohmann::json::parse(r.out)["timing"]["predicted_from_rates"];
  ASSERT_TRUE(p.is_object());
  const double step = p["step_seconds"];
  EXPECT_GT(step, 0.0);
  EXPECT_EQ(p["comm_seconds"], 0.0);
  EXPECT_NEAR(p["compute_seconds"].get<double>(), step, 1e-12 * step);
}

// --dry-run plans exactly the run train would start; its JSON carries the peak, every rank's
// figures, the breakdown and the budget's verdict, and a real run measures the same peak.
TEST(TrainCli, DryRunPredictsThePeakTheRunMeasures) {
  const std::string run =
      "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 3 "
      "--ranks 3 --stage 3 --bucket-bytes 4KiB --steps 2 --out '' --json";
  const auto plan = run_zerodp(run + " --dry-run --rank-memory 1GB");
  ASSERT_EQ(plan.status, 0) << plan.err;
  const auto p = nlohmann::json::parse(plan.out);
  const std::uint64_t peak = p["predicted_peak_bytes"];
  ASSERT_EQ(p["per_rank"].size(), 3u);
  EXPECT_EQ(p["per_rank"][0]["peak_bytes"], peak);
  std::uint64_t sum = 0;
  for (const auto& [name, bytes] : p["breakdown"].items()) sum += bytes.get<std::uint64_t>();
  EXPECT_EQ(sum, peak);
  EXPECT_EQ(p["budget"]["fits"], true);
  EXPECT_EQ(p["budget"]["cheapest_stage"], 0);
  const auto r = run_zerodp(run);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["peak_bytes"], peak);
  EXPECT_EQ(j["predicted_peak_bytes"], peak);
  for (const auto& rank : j["per_rank"])
    EXPECT_EQ(rank["peak_bytes"], rank["predicted_peak_bytes"]);
  // A byte less: refused on the rank, in one line naming the budget, with what would fit.
  const auto refused = run_zerodp(run + " --rank-memory " + std::to_string(peak - 1) + "B");
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("above its memory budget of " + std::to_string(peak - 1) + " B"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--rank-memory: at N = 3"), std::string::npos) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
}

TEST(MeasureCli, TakesTheModelFlagsAndShowsThePredictedPeak) {
  const auto r = run_zerodp(
      "measure --model gpt --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 "
      "--checkpoint-activations --grad-accum 2 --no-prefetch --bucket-bytes 2KiB --precision fp16 "
      "--ranks 2 --stage 3 --steps 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["model"].get<std::string>().find("GPT-2"), std::string::npos);
  const std::uint64_t predicted = j["predicted"]["peak_bytes"];
  EXPECT_GT(predicted, 0u);
  for (const auto& rank : j["per_rank"]) {
    EXPECT_EQ(rank["peak_bytes"], rank["predicted_peak_bytes"]);
    EXPECT_EQ(rank["at_peak_bytes"], rank["predicted_at_peak_bytes"]);
  }
  EXPECT_EQ(j["per_rank"][0]["peak_bytes"], predicted);
}

TEST(TrainCli, EveryStageEndsWithTheSameWeights) {
  std::string hash;
  for (int stage = 0; stage <= 3; ++stage) {
    const auto r = run_zerodp("train --model mlp --params 20K --ranks 3 --steps 4 --json --stage " +
                              std::to_string(stage));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(std::isfinite(j["final_loss"].get<double>()));
    if (stage == 0) hash = j["weights_sha256"];
    EXPECT_EQ(j["weights_sha256"], hash) << "stage " << stage;
    EXPECT_EQ(hash.size(), 64u);
  }
}

TEST(EngineCli, BadInputIsOneLineAndExitStatus2) {
  const std::pair<const char*, const char*> cases[] = {
    {"train --stage 4", "--stage: expected 0, 1, 2 or 3"},
    {"train --ranks 0", "--ranks: expected a whole number"},
    {"train --ranks 2.5", "--ranks: expected a whole number"},
    {"train --bucket-bytes 0B", "--bucket-bytes"},
    {"train --precision fp8", "--precision: expected bf16 or fp16"},
    {"train --backend nccl", "--backend: expected threads or mpi"},
    {"train --lr -1", "--lr: expected a positive number"},
    {"train --model gpt2", "--model: expected gpt or mlp"},
    {"train --heads 3", "--heads"},
    {"train --data /nonexistent/file", "/nonexistent/file"},
    {"train --clip nan", "--clip: expected a norm >= 0"},
    {"measure --params 0", "--params"},
    {"measure --steps 0", "--steps"},
    {"train --grad-accum 0", "--grad-accum"},
    {"train --rank-memory lots", "--rank-memory"},
    {"train --rank-memory 0B", "--rank-memory"},
    {"measure --rank-memory -1GB", "--rank-memory"},
    {"measure --model gpt --params 1M", "--params applies to --model mlp"},
    {"train --model mlp --params 1e15 --dry-run", "--params: the MLP has at most"},
    {"train --dry-run --resume /nonexistent", "--dry-run"},
    {"measure --link-rate 200mbits", "--link-rate: expected a bandwidth"},
    {"measure --link-delay 2ms", "--link-delay needs --link-rate"},
    {"measure --link-rate 1gbit --link-delay soon", "--link-delay"},
    {"measure --link-rate 1gbit", "--link-rate: the threads backend"},
    // Counted by the planner, not run by the engine: the refusal lists what it runs.
    {"train --optimizer adafactor-beta1",
     "--optimizer: the engine trains with adamw, adamw-8bit, adafactor, lion, lion-8bit, "
     "sgd-momentum, sgd; adafactor-beta1 is counted by the planner (zerodp plan), not run"},
    {"measure --optimizer lamb", "lamb is counted by the planner"},
#if defined(ZERODP_HAVE_MPI)  // without it, --backend mpi itself is refused
    {"train --dry-run --backend mpi", "--ranks"},
    // Started by hand it would train alone, a world of one rank (ctest starts it by hand).
    {"train --backend mpi --model mlp --steps 1 --out ''",
     "--backend: mpi needs its ranks started by mpirun, and this process was not"},
#endif
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_zerodp(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
}

}  // namespace
}  // namespace zerodp

namespace zerodp {
namespace {

TEST(TrainCli, GptLossFallsAndEveryStageAgrees) {
  // A tiny GPT on the default corpus: the loss starts near ln 256 = 5.545 and falls, and
  // stages 0 and 3 end with the same weights.
  std::string hash;
  for (int stage : {0, 3}) {
    const auto r = testing::run_zerodp(
        "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 4 --ranks 2 "
        "--steps 15 --eval-every 5 --out '" +
        ::testing::TempDir() +
        "/gpt_train' --json "
        "--stage " +
        std::to_string(stage));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_NEAR(j["first_loss"].get<double>(), 5.545, 0.1);
    EXPECT_LT(j["final_loss"].get<double>(), j["first_loss"].get<double>() - 0.5);
    EXPECT_LT(j["val_loss"].get<double>(), 5.0);
    EXPECT_EQ(j["model_state_bytes"], j["predicted_model_state_bytes"]);
    if (stage == 0) hash = j["weights_sha256"];
    EXPECT_EQ(j["weights_sha256"], hash);
  }
  const std::string csv = testing::slurp(::testing::TempDir() + "/gpt_train/loss.csv");
  EXPECT_EQ(csv.rfind("step,train_loss,val_loss\n1,", 0), 0u) << csv;
  const std::string svg = testing::slurp(::testing::TempDir() + "/gpt_train/loss.svg");
  EXPECT_NE(svg.find("validation loss"), std::string::npos);
}

}  // namespace
}  // namespace zerodp
