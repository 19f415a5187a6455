// `zerodp plan`'s predicted step as a user asks for it: how long, how fast, what it costs, and
// which stage is fastest; the links it assumes and the flags that change them; one-line refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"

namespace {

using zerodp::testing::has;
using zerodp::testing::plan_json;
using zerodp::testing::zerodp;

const std::string kRun =
    "--model llama-3-8b --gpus 16 --gpu h100-80gb --seq-len 4096 --micro-batch 1 "
    "--checkpointing full";

TEST(PlanStep, TokensBecomeWallClockGpuHoursAndCost) {
  const auto j = plan_json(kRun + " --tokens 1B --price-per-gpu-hour 2.5");
  EXPECT_EQ(j["inputs"]["time_from"], "step_model");
  EXPECT_DOUBLE_EQ(j["inputs"]["tokens"].get<double>(), 1e9);
  for (const auto& s : j["stages"]) {
    const double tps = s["tokens_per_second_per_gpu"].get<double>();
    const double step = s["step_seconds"].get<double>();
    // A step is one micro-batch of 4,096 tokens a GPU.
    EXPECT_NEAR(tps * step, 4096, 4096 * 1e-12) << s["name"];
    const double wall = s["wall_clock_seconds"].get<double>();
    EXPECT_NEAR(wall, 1e9 / (tps * 16), wall * 1e-12);
    EXPECT_NEAR(s["gpu_hours"].get<double>(), wall * 16 / 3600, wall * 1e-12);
    EXPECT_NEAR(s["cost"].get<double>(), 2.5 * s["gpu_hours"].get<double>(), 1e-9);
    // The step is its compute and what of its communication is not hidden.
    const auto& m = s["step"];
    EXPECT_NEAR(step,
                m["forward_seconds"].get<double>() + m["backward_seconds"].get<double>() +
                    s["exposed_seconds"].get<double>(),
                step * 1e-12);
    EXPECT_GT(s["mfu"].get<double>(), 0.3);
    EXPECT_LT(s["mfu"].get<double>(), 0.5399);  // below the HFU: recomputation is not in MFU
  }
  // ZeRO-3 hides its gathers behind compute; DeepSpeed's ZeRO-1 and 2 do not overlap by default.
  EXPECT_EQ(j["fastest_fitting_stage"], 3);
  EXPECT_EQ(j["cheapest_fitting_stage"], 1);
  EXPECT_LT(j["stages"][3]["exposed_seconds"].get<double>(),
            j["stages"][1]["exposed_seconds"].get<double>());
  // With overlap_comm, ZeRO-2's gradients hide too, its gather after the step still does not.
  const auto r = zerodp("plan --wide " + kRun + " --tokens 1B --price-per-gpu-hour 2.5");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "Fastest stage that fits with the 11 % margin, predicted: ZeRO-3 (step "))
      << r.out;
  EXPECT_TRUE(has(r.out, "--gpus-per-node 8 (an 8-GPU HGX H100/H200")) << r.out;
  EXPECT_TRUE(has(r.out, "--inter-node ib-ndr (the server's)")) << r.out;
  EXPECT_TRUE(has(r.out, "the median HFU of llm-foundry's 29 published H100 runs")) << r.out;
}

TEST(PlanStep, AFasterNetworkShortensOnlyWhatCrossesIt) {
  const auto hdr = plan_json(kRun + " --inter-node ib-hdr");
  const auto ndr = plan_json(kRun + " --inter-node ib-ndr");
  const auto& dp_hdr = hdr["stages"][0];
  const auto& dp_ndr = ndr["stages"][0];
  // DP's all-reduce crosses nodes, at the slower level's rate: with HDR the network's 8 x 24
  // GB/s; with NDR's 8 x 46 GB/s the network outruns NVLink 4's 367.2 GB/s, which then sets it.
  EXPECT_NEAR(dp_hdr["comm_seconds"].get<double>() / dp_ndr["comm_seconds"].get<double>(),
              367.2e9 / (8 * 24e9), 1e-12);
  EXPECT_DOUBLE_EQ(dp_hdr["step"]["forward_seconds"].get<double>(),
                   dp_ndr["step"]["forward_seconds"].get<double>());
  // On one node nothing crosses: the network is not asked for, and refused when given.
  const auto one =
      plan_json("--model llama-3-8b --gpus 8 --gpu h100-80gb --seq-len 4096 --micro-batch 1");
  EXPECT_TRUE(one["inputs"]["step_links"]["inter"].is_null());
  const auto r = zerodp(
      "plan --model llama-3-8b --gpus 8 --gpu h100-80gb --seq-len 4096 --micro-batch 1 "
      "--inter-node ib-ndr");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--inter-node: the 8 GPUs are one node")) << r.err;
}

TEST(PlanStep, ACardWithoutPublishedRunsTakesAnEfficiency) {
  const std::string run = "--model llama-3.2-1b --gpus 4 --gpu rtx-4090 --seq-len 1024";
  const auto without = plan_json(run);
  EXPECT_TRUE(without["stages"][3]["step"].is_null());
  // Said, with the flag that would give it.
  EXPECT_EQ(without["inputs"]["step_not_predicted"],
            "no published runs give rtx-4090's efficiency: give --efficiency, the fraction of its "
            "dense rate your runs reach (or give --compute-time)");
  const auto j = plan_json(run + " --efficiency 40%");
  EXPECT_TRUE(j["inputs"]["step_not_predicted"].is_null());
  EXPECT_DOUBLE_EQ(j["inputs"]["efficiency"]["value"].get<double>(), 0.4);
  EXPECT_EQ(j["inputs"]["step_links"]["intra"].get<std::string>().rfind("pcie4", 0), 0u);
  EXPECT_TRUE(j["stages"][3]["tokens_per_second_per_gpu"].is_number());
  // Sixteen PCIe cards span nodes the plan cannot guess: no step until they are given.
  const auto sixteen = plan_json("--model llama-3.2-1b --gpus 16 --gpu rtx-4090 --efficiency 0.4");
  EXPECT_TRUE(sixteen["stages"][3]["step"].is_null());
  EXPECT_EQ(sixteen["inputs"]["step_not_predicted"].get<std::string>().rfind(
                "the nodes and links are not known: give --gpus-per-node and --inter-node", 0),
            0u);
  EXPECT_TRUE(plan_json("--model llama-3.2-1b --gpus 16 --gpu rtx-4090 --efficiency 0.4 "
                        "--gpus-per-node 8 --inter-node ib-hdr")["stages"][3]["step"]
                  .is_object());
}

TEST(PlanStep, ComputeTimeAndOverlapReplaceTheirParts) {
  // --compute-time is the compute, shared by the forward and the backward as their FLOPs are
  // (with full checkpointing the recomputed forward is the backward's: 1/4 forward).
  const auto j = plan_json(kRun + " --compute-time 2s");
  const auto& m = j["stages"][0]["step"];
  EXPECT_NEAR(m["forward_seconds"].get<double>() + m["backward_seconds"].get<double>(), 2.0, 1e-12);
  EXPECT_GT(m["forward_seconds"].get<double>(), 0.24 * 2);
  EXPECT_LT(m["forward_seconds"].get<double>(), 0.26 * 2);
  // --overlap hides that fraction of every stage's communication, the seed's rule.
  const auto half = plan_json(kRun + " --overlap 0.5");
  for (const auto& s : half["stages"]) {
    EXPECT_NEAR(s["exposed_seconds"].get<double>(), s["comm_seconds"].get<double>() / 2, 1e-12)
        << s["name"];
  }
}

TEST(PlanStep, TheSeedsCellGIsUnchanged) {
  // One volume at one bandwidth: the seed's arithmetic, no predicted step.
  const auto j = plan_json("--params 1e9 --gpus 8 --compute-time 10s --bandwidth 300GB/s");
  EXPECT_EQ(j["inputs"]["time_from"], "ring");
  EXPECT_TRUE(j["stages"][0]["step"].is_null());
  EXPECT_TRUE(j["stages"][0]["tokens_per_second_per_gpu"].is_null());
  EXPECT_DOUBLE_EQ(j["stages"][0]["step_seconds"].get<double>(),
                   10 + j["stages"][0]["exposed_seconds"].get<double>());
}

TEST(PlanStep, BadInputIsOneLineNamingTheFlag) {
  const std::pair<const char*, const char*> cases[] = {
      {"--inter-node infiniband", "--inter-node: expected one of ib-hdr, ib-ndr, efa-p4d, efa-p5"},
      {"--intra-node ib-ndr", "--intra-node: expected one of nvlink3, nvlink4, nvlink5, pcie4"},
      {"--intra-node nvlink4 --gpus-per-node 8 --intra-bandwidth 300GB/s",
       "--intra-node: not with --intra-bandwidth"},
      {"--efficiency 0", "--efficiency: expected a fraction from 0.1% to 100%"},
      {"--efficiency 1e-300", "--efficiency: expected a fraction from 0.1% to 100%"},
      {"--gpus-per-node 8 --inter-bandwidth 1e-300B/s",
       "--inter-bandwidth: expected a bandwidth at which"},
      {"--gpus-per-node 8 --intra-bandwidth 1e-300B/s --inter-node ib-hdr",
       "--intra-bandwidth: expected a bandwidth at which"},
      {"--tokens 1B --price-per-gpu-hour 1e308", "--price-per-gpu-hour: expected a price whose"},
      {"--efficiency 150%", "--efficiency"},
      {"--tokens 0", "--tokens"},
      {"--price-per-gpu-hour 2.5", "--price-per-gpu-hour: needs --tokens"},
      {"--price-per-gpu-hour -1 --tokens 1B", "--price-per-gpu-hour"},
  };
  for (const auto& [flags, message] : cases) {
    const auto r = zerodp("plan " + kRun + " " + flags);
    EXPECT_EQ(r.status, 2) << flags << "\n" << r.out;
    EXPECT_TRUE(has(r.err, message)) << flags << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << flags << ": one line\n" << r.err;
  }
  const auto tokens = zerodp("plan --params 1e9 --gpus 8 --tokens 1B");
  EXPECT_EQ(tokens.status, 2);
  EXPECT_TRUE(has(tokens.err, "--tokens: needs the step's tokens and time")) << tokens.err;
}

TEST(PlanStep, TheLinkCatalogueIsListed) {
  const auto r = zerodp("plan --list-links");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "ib-ndr")) << r.out;
  const auto j = nlohmann::json::parse(zerodp("plan --list-links --json").out);
  ASSERT_GE(j.size(), 9u);
  for (const auto& l : j) {
    EXPECT_GT(l["bytes_per_second"].get<double>(), 0);
    EXPECT_EQ(l["source"].get<std::string>().rfind("https://", 0), 0u);
  }
}

}  // namespace

namespace {

TEST(PlanStep, GradientAccumulationRepeatsWhatAMicroStepDoes) {
  const auto one = plan_json(kRun);
  const auto four = plan_json(kRun + " --grad-accum 4");
  EXPECT_EQ(four["inputs"]["grad_accum"], 4);
  for (int stage = 0; stage < 4; ++stage) {
    const auto& a = one["stages"][stage];
    const auto& b = four["stages"][stage];
    // Four micro-steps of compute, four times the tokens.
    EXPECT_NEAR(b["step"]["backward_seconds"].get<double>(),
                4 * a["step"]["backward_seconds"].get<double>(), 1e-12);
    const double ratio = b["comm_seconds"].get<double>() / a["comm_seconds"].get<double>();
    // Stage 0 all-reduces and stage 1 reduce-scatters and gathers once a step; stage 2 reduces
    // every micro-step (its gather stays once); stage 3 does all of it every micro-step.
    const double expected[] = {1.0, 1.0, 2.5, 4.0};
    EXPECT_NEAR(ratio, expected[stage], 1e-12) << stage;
  }
  // Stages 0 and 1 spread their communication over more tokens: faster a token.
  EXPECT_GT(four["stages"][0]["tokens_per_second_per_gpu"].get<double>(),
            one["stages"][0]["tokens_per_second_per_gpu"].get<double>());
}

TEST(PlanStep, ADeepSpeedConfigsAccumulationIsTheStepsUnlessTheFlagSaysOtherwise) {
  const std::string path = zerodp::testing::fresh_path("ds_accum.json");
  std::ofstream(path) << R"({"zero_optimization": {"stage": 2}, "bf16": {"enabled": true},
    "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 8})";
  const auto j = plan_json(kRun + " --deepspeed-config " + path);
  EXPECT_EQ(j["inputs"]["grad_accum"], 8);
  const auto r = zerodp("plan " + kRun + " --deepspeed-config " + path + " --grad-accum 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--grad-accum")) << r.err;
  EXPECT_EQ(zerodp("plan " + kRun + " --grad-accum 0").status, 2);
}

}  // namespace
