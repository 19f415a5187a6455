// `zerodp plan` on GPUs as a user asks about them: the GPU's peak term by term, the card by name,
// the verdict when nothing fits and what would, the optimizer step's own allocations, DeepSpeed's
// estimate and ZeRO++ across nodes. The real executable, its table and its JSON.
// The plan is read at its whole width (--wide), each sentence on its line: where the lines of
// the default output wrap is plan_width_test.cc's.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_testing.h"

namespace {

using Result = zerodp::testing::CliResult;
using zerodp::testing::has;
using zerodp::testing::plan_json;
using zerodp::testing::u64;
using zerodp::testing::zerodp;

TEST(PlanCliPeak, WillLlamaThreeEightBFitOnEightFortyGigabyteGpusWithZeroTwo) {
  // The question as a user asks it, answered by one command with the reason and the way out.
  const std::string run =
      "--model llama-3-8b --gpus 8 --gpu-memory 40GB --seq-len 4096 --micro-batch 1 "
      "--checkpointing full --attention flash --stage 2";
  const Result r = zerodp("plan --wide " + run);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "--stage 2: ZeRO-2 is tight at N = 8: peak 42.5 GB > 40.0 GB, within the "
                  "planner's error (model state 30.1 GB + CUDA 2.00 GB + activations 8.34 GB + "
                  "reduce buffers "
                  "1.00 GB + a layer's gradient 1.05 GB)."))
      << r.out;
  EXPECT_TRUE(has(r.out, "With --offload-optimizer cpu, ZeRO-2 fits at N = 8 (peak 28.4 GB"))
      << r.out;
  EXPECT_TRUE(has(r.out,
                  "Cheapest stage that fits with the 11 % margin at N = 8: ZeRO-3 (peak 29.6 GB "
                  "<= 40.0 GB); ZeRO-2 is tight (peak 42.5 GB > 40.0 GB"))
      << r.out;

  // Every term of the peak, from DeepSpeed's defaults: two-byte grads in a 5e8-element bucket,
  // the largest module's whole 16-bit gradient before it is copied there, the fp32 copy of the
  // 1/8 gradient shard, the 2 GB allowance.
  const auto j = plan_json(run);
  const std::uint64_t phi = 8'030'261'248, shard = phi / 8 + (phi % 8 != 0);
  const auto& z2 = j["stages"][2];
  EXPECT_EQ(u64(z2["peak"]["reduce_buffer_bytes"]), 1'000'000'000u);
  EXPECT_EQ(u64(z2["peak"]["step_fp32_grad_bytes"]), 4 * shard);
  EXPECT_EQ(u64(z2["peak"]["cuda_overhead_bytes"]), 2'000'000'000u);
  EXPECT_EQ(u64(z2["peak"]["layer_grad_bytes"]), 2 * 128'256u * 4096);
  EXPECT_EQ(u64(z2["peak"]["peak_bytes"]), u64(z2["model_state_bytes"]) + 2'000'000'000u +
                                               u64(j["activation_bytes"]) + 1'000'000'000u +
                                               2 * 128'256u * 4096);
  EXPECT_EQ(z2["peak"]["peak_bytes"], z2["total_bytes"]);
  EXPECT_FALSE(z2["fits"].get<bool>());
  // ZeRO-3 gathers the largest layer (the 128256 x 4096 embedding) and the 5e7 prefetch, and
  // keeps the 65 RMSNorm weights whole. The reuse distance (1e9) keeps the head alone: the
  // final norm has its 525M elements after it, more than half the distance.
  const auto& z3 = j["stages"][3]["peak"];
  EXPECT_EQ(u64(z3["gathered_param_bytes"]), 2 * (128'256u * 4096 + 50'000'000));
  EXPECT_EQ(u64(z3["persistent_param_bytes"]), 2 * 65 * 4096u);
  // Turned off, the plan is the seed's accounting again.
  const auto bare = plan_json(run + " --buffers none --cuda-overhead 0");
  EXPECT_TRUE(bare["stages"][2]["peak"].is_null());
  EXPECT_EQ(u64(bare["stages"][2]["total_bytes"]),
            u64(z2["model_state_bytes"]) + u64(j["activation_bytes"]));
}

TEST(PlanCliPeak, OnTheA100s40GBZeroTwoFitsWhere40DecimalGBDoesNot) {
  // The same question on the card itself: it reports 42,298,834,944 bytes (39.39 GiB), more
  // than the 40.0 GB that "--gpu-memory 40GB" means, and at 3072 tokens ZeRO-2's 40.4 GB
  // peak fits in it.
  const std::string run =
      "--model llama-3-8b --gpus 8 --seq-len 3072 --micro-batch 1 --checkpointing full "
      "--attention flash --stage 2 ";
  const Result card = zerodp("plan --wide " + run + "--gpu a100-40gb");
  ASSERT_EQ(card.status, 0) << card.err;
  // 40.4 GB and the planner's 5 % of under-prediction exceed 42.3 GB: it fits as predicted,
  // but tight.
  EXPECT_TRUE(has(card.out,
                  "--stage 2: ZeRO-2 is tight at N = 8: peak 40.4 GB <= 42.3 GB, within the "
                  "planner's error"))
      << card.out;
  EXPECT_TRUE(has(card.out,
                  "GPU: NVIDIA A100-SXM4-40GB, sold as 40 GB HBM2; it reports "
                  "39.39 GiB (42.30 GB) to CUDA (https://"))
      << card.out;
  const auto j = plan_json(run + "--gpu A100-40GB");
  EXPECT_EQ(u64(j["inputs"]["gpu_memory_bytes"]), 42'298'834'944u);
  EXPECT_EQ(j["inputs"]["gpu"]["name"], "a100-40gb");
  EXPECT_TRUE(j["stages"][2]["fits"].get<bool>());
  EXPECT_EQ(j["stages"][2]["verdict"], "tight");
  EXPECT_EQ(j["stages"][3]["verdict"], "fits");
  EXPECT_EQ(j["tight_band"]["under"].get<double>(), 0.11);
  EXPECT_EQ(j["tight_band"]["over"].get<double>(), 0.11);
  // "40GB" typed: the plan says which card is sold as that, and what it reports instead.
  const Result typed = zerodp("plan --wide " + run + "--gpu-memory 40GB");
  EXPECT_TRUE(has(typed.out,
                  "note: cards sold as 40 GB report other totals to CUDA: a100-40gb 42.30 GB "
                  "(--gpu NAME plans for the card)\n"))
      << typed.out;
  EXPECT_EQ(plan_json(run + "--gpu-memory 40GB")["inputs"]["cards_sold_as_gpu_memory"][0]["name"],
            "a100-40gb");
  // A figure as an out-of-memory message prints it is read, rounded down to whole bytes.
  EXPECT_EQ(u64(plan_json(run + "--gpu-memory 39.39GiB")["inputs"]["gpu_memory_bytes"]),
            3939ull * (1ull << 30) / 100);
}

TEST(PlanCliPeak, WhenNothingFitsThePlanStillPrintsWithWhatWouldFit) {
  // A first try without checkpointing: 42.9 GB of activations on a 42.3 GB card. Not an error:
  // the verdict, the reason, and the changes that fit, each planned again.
  const std::string run =
      "--model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 2048 --micro-batch 1 --stage 2 "
      "--attention eager";
  const Result r = zerodp("plan --wide " + run);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "No stage fits at any N: the activations (42.9 GB) and the CUDA "
                  "allowance (2.00 GB) alone reach the GPU memory (42.3 GB)."))
      << r.out;
  // Each change is offered where it fits with the planner's 11 % margin: checkpointing brings
  // ZeRO-2 to 39.2 GB, both to 38.3 GB, which 11 % more does not fit in 42.3 GB, and flash
  // attention alone leaves it at 50.5 GB, so all three are offered with ZeRO-3. Said so.
  EXPECT_TRUE(has(r.out,
                  "What would fit with the 11 % margin at N = 8: --checkpointing full with "
                  "ZeRO-3 instead of ZeRO-2 (activations 5.00 GB; ZeRO-3, peak 26.3 GB); "
                  "--attention flash with ZeRO-3 "
                  "instead of ZeRO-2 (activations 16.4 GB; ZeRO-3, peak 37.6 GB); "
                  "--checkpointing full --attention flash with ZeRO-3 instead of ZeRO-2 "
                  "(activations 4.17 GB; ZeRO-3, peak 25.4 GB)."))
      << r.out;
  const auto j = plan_json(run);
  EXPECT_TRUE(j["activations_fill_gpu"].get<bool>());
  EXPECT_EQ(u64(j["budget_bytes"]), 0u);
  ASSERT_EQ(j["what_would_fit"].size(), 3u);
  EXPECT_EQ(j["what_would_fit"][0]["change"], "--checkpointing full");
  EXPECT_EQ(j["what_would_fit"][0]["stage"], 3);
  EXPECT_EQ(j["what_would_fit"][0]["gpus"], 8);
  EXPECT_EQ(j["what_would_fit"][1]["change"], "--attention flash");
  EXPECT_EQ(j["what_would_fit"][1]["stage"], 3);
  // Each suggestion is the plan of that change: the same peak when it is made, and its verdict
  // `fits`, so that plan offers nothing more.
  std::string at_zero3 = run;
  at_zero3.replace(at_zero3.find("--stage 2"), 9, "--stage 3");
  const auto changed = plan_json(at_zero3 + " --checkpointing full");
  EXPECT_EQ(j["what_would_fit"][0]["total_bytes"], changed["stages"][3]["total_bytes"]);
  EXPECT_EQ(changed["stages"][3]["verdict"], "fits");
  EXPECT_TRUE(changed["what_would_fit"].empty());
  const auto clear = plan_json(
      "--model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 2048 --micro-batch 1 --stage 3 "
      "--attention eager --checkpointing full");
  EXPECT_TRUE(clear["what_would_fit"].empty());
  const auto flash = plan_json(
      "--model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 2048 --micro-batch 1 "
      "--attention flash --stage 3");
  EXPECT_EQ(j["what_would_fit"][1]["total_bytes"], flash["stages"][3]["total_bytes"]);
  EXPECT_TRUE(flash["stages"][3]["fits"].get<bool>());
}

TEST(PlanCliPeak, AChangeThatNeedsMoreGpusNamesTheirNumberAndItsPeakThere) {
  // Four 4096-token sequences of Llama-3-70B on 8 A100 40GB: no change of the activations fits
  // on 8 GPUs at any stage, so each that fits is named with the least N of ZeRO-3, its peak
  // planned again at that N.
  const std::string run =
      "--model llama-3-70b --gpus 8 --gpu a100-40gb --seq-len 4096 --micro-batch 4";
  const auto j = plan_json(run);
  ASSERT_FALSE(j["what_would_fit"].empty());
  for (const auto& change : j["what_would_fit"]) {
    const std::uint64_t n = change["gpus"].get<std::uint64_t>();
    EXPECT_GT(n, 8u);
    // The run with the change made: its micro-batch replaces the run's when it names one.
    std::string changed = std::string(change["change"]);
    if (changed.find("--micro-batch") == std::string::npos) changed += " --micro-batch 4";
    const std::string base = "--model llama-3-70b --gpu a100-40gb --seq-len 4096 " + changed;
    const auto there = plan_json(base + " --gpus " + std::to_string(n));
    const int stage = change["stage"].get<int>();
    EXPECT_EQ(change["total_bytes"], there["stages"][stage]["total_bytes"]) << changed;
    // The least N that fits with the planner's margin: one GPU fewer does not, or only tight.
    EXPECT_EQ(there["stages"][stage]["verdict"], "fits") << changed;
    const auto fewer = plan_json(base + " --gpus " + std::to_string(n - 1));
    EXPECT_NE(fewer["stages"][stage]["verdict"], "fits") << changed;
  }
}

TEST(PlanCli, DeepSpeedsEstimateWithGpusAloneIsOneNodeOfThem) {
  // DeepSpeed's estimators default to one node: --gpus 8 alone is --gpus-per-node 8.
  const auto alone =
      plan_json("--model llama-3-8b --gpus 8 --estimator deepspeed --activations 0B");
  const auto node = plan_json(
      "--model llama-3-8b --gpus-per-node 8 --nodes 1 --estimator deepspeed --activations 0B");
  EXPECT_EQ(alone["deepspeed"], node["deepspeed"]);
  EXPECT_EQ(alone["inputs"]["gpus"], 8);
}

TEST(PlanCliPeak, TheOptimizersTemporariesFollowTheConfigOrTheFlag) {
  // Llama-3-8B on 8 A100 40GB at ZeRO-2: the step holds the 4.02 GB fp32 gradient shard and
  // the larger of flatten()'s 2.01 GB 16-bit copy and the optimizer's temporaries.
  const std::string run =
      "--model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 4096 --micro-batch 1 "
      "--checkpointing full --attention flash --precision bf16 --stage 2 ";
  const std::uint64_t shard = (8'030'261'248u + 7) / 8;
  auto z2 = [&](const std::string& extra) { return plan_json(run + extra)["stages"][2]; };
  EXPECT_EQ(plan_json(run)["inputs"]["optimizer_impl"], "fused");
  EXPECT_EQ(u64(z2("")["peak"]["optimizer_temp_bytes"]), 0u);
  EXPECT_EQ(u64(z2("")["peak"]["step_flat_grad_bytes"]), 2 * shard);
  EXPECT_EQ(u64(z2("--optimizer-impl foreach")["peak"]["optimizer_temp_bytes"]), 4 * shard);
  // torch's single-tensor AdamW holds two fp32 shards: the step (4.02 + 8.03 GB) sets the peak
  // and ZeRO-2 no longer fits the card.
  const auto single = z2("--optimizer-impl single");
  EXPECT_EQ(u64(single["peak"]["optimizer_temp_bytes"]), 8 * shard);
  EXPECT_FALSE(single["fits"].get<bool>());
  EXPECT_TRUE(has(zerodp("plan --wide " + run + "--optimizer-impl single").out,
                  "(model state 30.1 GB + CUDA 2.00 GB + step fp32 grads 4.02 GB + optimizer "
                  "temporaries 8.03 GB)"));
  // A config without an optimizer block: the Hugging Face Trainer's torch AdamW, foreach.
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/ds_no_opt.json") << R"({"zero_optimization": {"stage": 2},
    "bf16": {"enabled": true}})";
  std::ofstream(dir + "/ds_torch.json") << R"({"zero_optimization": {"stage": 2},
    "bf16": {"enabled": true},
    "optimizer": {"type": "AdamW", "params": {"torch_adam": true, "foreach": false}}})";
  std::ofstream(dir + "/ds_fused.json") << R"({"zero_optimization": {"stage": 2},
    "bf16": {"enabled": true}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}}})";
  const std::string base =
      "--model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 4096 "
      "--micro-batch 1 --checkpointing full --attention flash --precision bf16 "
      "--deepspeed-config " +
      dir;
  EXPECT_EQ(plan_json(base + "/ds_no_opt.json")["inputs"]["optimizer_impl"], "foreach");
  EXPECT_EQ(plan_json(base + "/ds_torch.json")["inputs"]["optimizer_impl"], "single");
  EXPECT_EQ(plan_json(base + "/ds_fused.json")["inputs"]["optimizer_impl"], "fused");
  EXPECT_EQ(plan_json(base + "/ds_no_opt.json --optimizer-impl single")["inputs"]["optimizer_impl"],
            "single");
  const Result conflict = zerodp("plan --wide " + base + "/ds_fused.json --optimizer-impl foreach");
  EXPECT_EQ(conflict.status, 2);
  EXPECT_TRUE(has(conflict.err, "--optimizer-impl: 'foreach' contradicts ")) << conflict.err;
  const Result bad = zerodp("plan --wide " + run + "--optimizer-impl apex");
  EXPECT_EQ(bad.err, "zerodp: --optimizer-impl: expected fused, foreach or single, got 'apex'\n");
}

TEST(PlanCli, GpusByNameAreListedAndAMistakeIsOneLine) {
  const Result list = zerodp("plan --wide --list-gpus");
  ASSERT_EQ(list.status, 0) << list.err;
  for (const char* name : {"a100-40gb", "a100-80gb", "h100-80gb", "rtx-4090", "t4", "mi300x"}) {
    EXPECT_TRUE(has(list.out, name)) << name;
  }
  Result r = zerodp("plan --wide --params 1e9 --gpus 8 --gpu a100");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "zerodp: --gpu: unknown GPU 'a100'; did you mean 'a100-40gb'? (--list-gpus lists "
            "them; --gpu-memory gives any other)\n");
  r = zerodp("plan --wide --params 1e9 --gpus 8 --gpu t4 --gpu-memory 16GB");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "zerodp: --gpu-memory: not with --gpu, which gives the card's memory; give one\n");
}

TEST(PlanCliPeak, ADeepSpeedConfigWithOffloadAndZeroPlusPlusChangesThePlan) {
  // Llama 2 70B on 8 nodes of 8 GPUs, the ZeRO++ tutorial's keys plus optimizer offload.
  const std::string path = ::testing::TempDir() + "/zeropp.json";
  std::ofstream(path) << R"({"bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
      "zero_quantized_weights": true, "zero_hpz_partition_size": 8,
      "zero_quantized_gradients": true, "reduce_bucket_size": "auto",
      "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto"}})";
  const std::string base =
      "--model llama-2-70b --gpus-per-node 8 --nodes 8 --gpu-memory 80GB --activations 0B ";
  const auto with_config = plan_json(base + "--deepspeed-config " + path);
  const auto plain = plan_json(base + "--precision bf16");
  const std::uint64_t phi = u64(plain["inputs"]["params"]);
  ASSERT_EQ(phi % 64, 0u);  // 68,976,648,192: every division below is exact
  // Across nodes ZeRO-3 sends a quarter of plain ZeRO-3's bytes: 3 x 2Φ x 7/64 -> 1.5Φ x 7/64.
  EXPECT_EQ(u64(plain["stages"][3]["levels"]["inter_bytes"]), 3 * 2 * phi / 64 * 7);
  EXPECT_EQ(u64(with_config["stages"][3]["levels"]["inter_bytes"]), (phi + phi / 2) / 64 * 7);
  EXPECT_EQ(with_config["zeropp_cross_node_volume_m"]["zeropp"].get<double>(), 0.75);
  // hpZ's copy costs 2Φ/8 per GPU; the optimizer states left for the CPU.
  const auto& z3 = with_config["stages"][3];
  EXPECT_EQ(u64(z3["peak"]["hpz_secondary_bytes"]), 2 * phi / 8);
  // The 16-bit param shard; the gradient shard lives on the host with the optimizer states,
  // beside its fp32 copy.
  EXPECT_EQ(u64(z3["model_state_bytes"]), 2 * phi / 64);
  EXPECT_EQ(u64(z3["offload"]["host_bytes_per_gpu"]), 18 * phi / 64);
  EXPECT_EQ(u64(z3["peak"]["step_fp32_grad_bytes"]), 0u);  // the CPU steps
  // "auto" sizes as the Hugging Face integration fills them from h = 8192.
  EXPECT_EQ(u64(z3["peak"]["reduce_buffer_bytes"]), 2u * 8192 * 8192);
  // Gathered: what the reuse distance (1e9) keeps at the turn to backward, the head
  // (32000 x 8192), the final norm and the last layer's down and up projections (8192 x 28672
  // each; the gate has 497M after it, more than half the distance), and the prefetch.
  const std::uint64_t kept = 32000u * 8192 + 8192 + 2u * 8192 * 28672;
  EXPECT_EQ(u64(z3["peak"]["gathered_param_bytes"]), 2 * (kept + 8192u * 8192 * 9 / 10));
  // Stages 0-2 are untouched by ZeRO++.
  EXPECT_EQ(with_config["stages"][2]["levels"], plain["stages"][2]["levels"]);
  // The same plan from flags.
  const auto with_flags =
      plan_json(base + "--precision bf16 --stage 3 --offload-optimizer cpu --zeropp qwz,hpz,qgz");
  EXPECT_EQ(with_flags["stages"][3]["levels"], z3["levels"]);
  EXPECT_EQ(with_flags["stages"][3]["peak"]["hpz_secondary_bytes"],
            z3["peak"]["hpz_secondary_bytes"]);
  // And a flag that says otherwise is an error naming both.
  const Result clash =
      zerodp("plan --wide " + base + "--deepspeed-config " + path + " --zeropp qwz");
  EXPECT_EQ(clash.status, 2);
  EXPECT_TRUE(has(clash.err, "--zeropp: 'qwz' contradicts")) << clash.err;
  // With --params instead of a model, the config's ZeRO-3 buffers need the largest layer.
  const Result no_layer =
      zerodp("plan --wide --params 70B --gpus-per-node 8 --nodes 8 --deepspeed-config " + path);
  EXPECT_EQ(no_layer.status, 2);
  EXPECT_TRUE(has(no_layer.err, "--largest-layer: required with --params and --deepspeed-config"))
      << no_layer.err;
}

TEST(PlanCliPeak, TwoLevelsSetTheStepTime) {
  const auto j = plan_json(
      "--params 64e9 --gpus-per-node 8 --nodes 4 --intra-bandwidth 200GB/s "
      "--inter-bandwidth 25GB/s --compute-time 10s --overlap 0.5");
  // ZeRO-3: three buffers of 2Φ, 7/8 of each inside (336 GB), 3/32 across (36 GB). Each
  // collective's 124 GB run at the slower level's bus rate: inside 200 GB/s, across the node's
  // eight 25 GB/s, 200 GB/s: 0.62 s each, 1.86 s in all, half of it hidden (--overlap 0.5).
  const auto& z3 = j["stages"][3];
  EXPECT_EQ(u64(z3["levels"]["intra_bytes"]), 336'000'000'000u);
  EXPECT_EQ(u64(z3["levels"]["inter_bytes"]), 36'000'000'000u);
  // Every collective crosses nodes: all of their time is the levels' inter_seconds.
  EXPECT_NEAR(z3["levels"]["inter_seconds"].get<double>(), 1.86, 1e-12);
  EXPECT_EQ(z3["levels"]["intra_seconds"].get<double>(), 0.0);
  ASSERT_EQ(z3["step"]["collectives"].size(), 3u);
  for (const auto& c : z3["step"]["collectives"]) {
    EXPECT_NEAR(c["seconds"].get<double>(), 0.62, 1e-12);
  }
  EXPECT_NEAR(z3["comm_seconds"].get<double>(), 1.86, 1e-12);
  EXPECT_NEAR(z3["exposed_seconds"].get<double>(), 0.93, 1e-12);
  EXPECT_NEAR(z3["step_seconds"].get<double>(), 10.93, 1e-12);
  // Across nodes at a quarter of the rate, the same collectives take four times as long.
  const auto slow = plan_json(
      "--params 64e9 --gpus-per-node 8 --nodes 4 --intra-bandwidth 200GB/s "
      "--inter-bandwidth 6.25GB/s --compute-time 10s --overlap 0.5");
  EXPECT_NEAR(slow["stages"][3]["comm_seconds"].get<double>(), 4 * 1.86, 1e-12);
  EXPECT_EQ(j["inputs"]["time_from"], "step_model");
  EXPECT_EQ(j["inputs"]["nodes"].get<int>(), 4);
  EXPECT_EQ(j["inputs"]["gpus"].get<int>(), 32);
  // The seed's examples do not change: no topology, no levels, no peak.
  const auto seed = plan_json("--params 1e9 --gpus 8");
  EXPECT_TRUE(seed["stages"][0]["levels"].is_null());
  EXPECT_TRUE(seed["stages"][0]["peak"].is_null());
}

}  // namespace

namespace {

TEST(PlanCliPeak, StageZeroUnderFp16StepsOnFp32GradientsBuiltFromCasts) {
  // DeepSpeed's fp16 optimizers cast every 16-bit gradient to fp32, which lives beside the
  // 16-bit gradients at the step: FP16_Optimizer (FusedAdam) flattens the casts into one fp32
  // gradient (4 bytes a parameter each); FP16_UnfusedOptimizer (torch's AdamW) keeps them as
  // the fp32 masters' gradients, and foreach AdamW's copy of them all follows. bf16 at stage 0
  // is another optimizer (BF16_Optimizer), and --bytes-per-param names no precision.
  const std::string run = "--model llama-3-8b --gpus 8 --seq-len 512 --micro-batch 1 ";
  const std::uint64_t phi = 8'030'261'248;
  const auto fused = plan_json(run + "--precision fp16");
  const auto& f = fused["stages"][0]["peak"];
  EXPECT_EQ(u64(f["step_fp32_grad_bytes"]), 4 * phi);
  EXPECT_EQ(u64(f["step_flat_grad_bytes"]), 4 * phi);
  EXPECT_EQ(u64(f["optimizer_temp_bytes"]), 0u);
  const auto foreach = plan_json(run + "--precision fp16 --optimizer-impl foreach");
  const auto& dp = foreach["stages"][0]["peak"];
  EXPECT_EQ(u64(dp["step_fp32_grad_bytes"]), 4 * phi);
  EXPECT_EQ(u64(dp["step_flat_grad_bytes"]), 0u);
  EXPECT_EQ(u64(dp["optimizer_temp_bytes"]), 4 * phi);
  for (const auto* j : {&fused, &foreach}) {
    EXPECT_EQ(u64((*j)["stages"][0]["peak"]["peak_bytes"]),
              u64((*j)["stages"][0]["model_state_bytes"]) + 2'000'000'000u + 8 * phi);
  }
  // The single-tensor path steps one tensor at a time: two fp32 copies of the largest.
  const auto single = plan_json(run + "--precision fp16 --optimizer-impl single");
  EXPECT_EQ(u64(single["stages"][0]["peak"]["optimizer_temp_bytes"]), 8 * 128'256u * 4096);
  for (const char* other : {"--precision bf16", "--bytes-per-param 2,2,12"}) {
    const auto j = plan_json(run + other);
    EXPECT_EQ(u64(j["stages"][0]["peak"]["step_fp32_grad_bytes"]), 0u) << other;
  }
}

}  // namespace

namespace {

TEST(PlanCliPeak, ZeroPlusPlusKeysBelowStageThreeAreIgnoredAsDeepSpeedIgnoresThem) {
  // DeepSpeed reads zero_hpz_partition_size and the quantization switches only on its stage-3
  // path; a stage-2 config that holds them runs on one GPU, and its plan is the config's
  // without them, with a warning that says so.
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/hpz2.json") << R"({"bf16": {"enabled": true}, "zero_optimization":
      {"stage": 2, "zero_hpz_partition_size": 8, "zero_quantized_weights": true}})";
  std::ofstream(dir + "/plain2.json")
      << R"({"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})";
  const std::string run =
      "--model llama-3-8b --gpus 1 --gpu a100-80gb --seq-len 512 --micro-batch 1 ";
  const Result r = zerodp("plan --wide " + run + "--deepspeed-config " + dir + "/hpz2.json --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, "ZeRO++ keys (") && has(r.err,
                                                 "are read by DeepSpeed at stage 3 only; "
                                                 "ignored at stage 2\n"))
      << r.err;
  const auto with = nlohmann::json::parse(r.out);
  const auto without = plan_json(run + "--deepspeed-config " + dir + "/plain2.json");
  EXPECT_EQ(with["stages"], without["stages"]);
}

}  // namespace

namespace {

TEST(PlanCliPeak, UnderFsdpTheGradientsComeInTheBackwardAndTheStepWorksOnTheShards) {
  // Llama-2-7B on 4 GPUs under FSDP FULL_SHARD with bf16 mixed precision (its shards fp32):
  // the model state is ZeRO-3's 16 bytes a parameter over N; while the activations peak the
  // gradients' 4 bytes a parameter are not made yet; gathered are the root unit (the 32000 x
  // 4096 embedding and head and the final norm) and two layers, in bf16; the head's gradient
  // and one layer's wait for their reduce-scatter; the step is torch's foreach AdamW's copy of
  // the fp32 shard, and no fp32 or flat copy of the gradients.
  const std::string run =
      "--model llama-2-7b --gpus 4 --gpu a100-40gb --seq-len 2048 --micro-batch 4 "
      "--checkpointing full --precision bf16 --stage 3 --framework fsdp";
  const auto j = plan_json(run);
  EXPECT_EQ(j["inputs"]["framework"], "fsdp");
  const std::uint64_t phi = 6'738'415'616, shard = phi / 4;
  const std::uint64_t head = 32'000u * 4096, root = 2 * head + 4096;
  const std::uint64_t layer = 4 * 4096u * 4096 + 3 * 4096u * 11008 + 2 * 4096;
  const auto& z3 = j["stages"][3];
  const auto& peak = z3["peak"];
  EXPECT_EQ(u64(z3["model_state_bytes"]), 16 * shard);
  EXPECT_EQ(u64(peak["deferred_grad_bytes"]), 4 * shard);
  EXPECT_EQ(u64(peak["gathered_param_bytes"]), 2 * (root + 2 * layer));
  EXPECT_EQ(u64(peak["layer_grad_bytes"]), 2 * (layer + head));
  EXPECT_EQ(u64(peak["optimizer_temp_bytes"]), 4 * shard);
  EXPECT_EQ(u64(peak["step_fp32_grad_bytes"]), 0u);
  EXPECT_EQ(u64(peak["step_flat_grad_bytes"]), 0u);
  EXPECT_EQ(u64(peak["reduce_buffer_bytes"]), 0u);
  // The peak is the later of the two phases: here the step's, all the state and the copy.
  const std::uint64_t activations = u64(j["activation_bytes"]);
  const std::uint64_t backward =
      12 * shard + activations + 2 * (root + 2 * layer) + 2 * (layer + head);
  const std::uint64_t step = 16 * shard + 4 * shard;
  EXPECT_EQ(u64(peak["peak_bytes"]), 2'000'000'000u + std::max(backward, step));
  // The rows below ZeRO-3 are DeepSpeed's, as the header says, with DeepSpeed's optimizer.
  const auto deepspeed = plan_json(run.substr(0, run.find(" --stage")));
  for (int stage = 0; stage < 3; ++stage) {
    EXPECT_EQ(j["stages"][stage], deepspeed["stages"][stage]) << stage;
  }
  const Result table = zerodp("plan --wide " + run);
  EXPECT_TRUE(has(table.out, "framework: PyTorch FSDP, FULL_SHARD in ZeRO-3's row")) << table.out;
  // Without FSDP's rate limiter the CPU may issue all-gathers ahead, but the units it frees
  // stay freed: their blocks wait in the allocator for the compute stream, and are returned
  // before any out-of-memory error (deepspeed/runtime.h). The same params are gathered.
  const auto unlimited = plan_json(run + " --limit-all-gathers off");
  EXPECT_EQ(unlimited["stages"][3]["peak"]["gathered_param_bytes"],
            j["stages"][3]["peak"]["gathered_param_bytes"]);
  EXPECT_EQ(unlimited["inputs"]["limit_all_gathers"], false);
  EXPECT_TRUE(j["inputs"]["limit_all_gathers"].get<bool>());
  // What FSDP is not planned with is one line, exit 2.
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--params 7e9 --gpus 4 --framework fsdp", "--framework fsdp: needs --model"},
           {"--model llama-2-7b --gpus 4 --seq-len 512 --micro-batch 1 --framework fsdp "
            "--stage 2",
            "--stage: expected 3 with --framework fsdp"},
           {"--model llama-2-7b --gpus 4 --seq-len 512 --micro-batch 1 --framework fsdp "
            "--offload-params cpu",
            "--framework fsdp: not with --offload-optimizer or --offload-params"},
           {"--model llama-2-7b --gpus 4 --seq-len 512 --micro-batch 1 --framework torch",
            "--framework: expected deepspeed or fsdp, got 'torch'"},
           {"--model llama-2-7b --gpus 4 --seq-len 512 --micro-batch 1 --limit-all-gathers off",
            "--limit-all-gathers: applies to --framework fsdp"},
           {"--model llama-2-7b --gpus 4 --seq-len 512 --micro-batch 1 --framework fsdp "
            "--limit-all-gathers false",
            "--limit-all-gathers: expected on or off, got 'false'"}}) {
    const Result bad = zerodp("plan --wide " + flags);
    EXPECT_EQ(bad.status, 2) << flags;
    EXPECT_TRUE(has(bad.err, message)) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  }
}

}  // namespace
