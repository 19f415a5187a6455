// `zerodp plan` as a newcomer first types it: the defaults users run, said in one line; a verdict
// per stage with the planner's measured error as its margin; what would fit without --gpus; the
// host memory an offload needs, checked. The real executable, its table and its JSON.
// The plan is read at its whole width (--wide), each sentence on its line: where the lines of
// the default output wrap is plan_width_test.cc's.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>

#include "cli/cli_testing.h"

namespace {

using Result = zerodp::testing::CliResult;
using zerodp::testing::has;
using zerodp::testing::plan_json;
using zerodp::testing::u64;
using zerodp::testing::zerodp;

TEST(FirstAnswer, TheDefaultsAreWhatUsersRunAndEachIsSaid) {
  // Only the model and the cards: bf16, sdpa, run_clm's 1024 tokens and the Trainer's batch of 8.
  const Result r = zerodp("plan --wide --model llama-3-8b --gpus 8 --gpu a100-40gb");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "assumed (not given): --precision bf16 (mixed, with an fp32 master copy); "
                  "--seq-len 1024 (run_clm's and TRL's default); --micro-batch 8 (the Trainer's "
                  "per_device_train_batch_size); --checkpointing none (the Trainer's default); "
                  "--attention sdpa (transformers' default); --cuda-overhead 2.00 GB"))
      << r.out;
  const auto j = plan_json("--model llama-3-8b --gpus 8 --gpu a100-40gb");
  const auto typed = plan_json(
      "--model llama-3-8b --gpus 8 --gpu a100-40gb --precision bf16 --seq-len 1024 "
      "--micro-batch 8 --checkpointing none --attention sdpa --cuda-overhead 2GB "
      "--gpus-per-node 8 --intra-node nvlink3");
  // The assumed plan is the typed one, byte for byte; only the list of assumptions differs.
  EXPECT_EQ(j["stages"], typed["stages"]);
  EXPECT_EQ(j["assumptions"].size(), 8u);
  EXPECT_EQ(typed["assumptions"].size(), 0u);
  EXPECT_EQ(j["assumptions"][1]["input"], "--seq-len");
  EXPECT_EQ(j["assumptions"][1]["value"], "1024");
}

TEST(FirstAnswer, SdpaKeepsFlashsTensorsAndItsOwnOutput) {
  // Per layer, SDPA saves what flash_attention_2 saves plus its output (2 bytes x T x heads x
  // head_dim = 2 x 4096 x 4096 for Llama-3-8B at 4096 tokens), 32 layers; no s^2 scores.
  const std::string run =
      "--model llama-3-8b --gpus 8 --gpu-memory 80GB --seq-len 4096 "
      "--micro-batch 1 --checkpointing none --attention ";
  const std::uint64_t sdpa = u64(plan_json(run + "sdpa")["activation_bytes"]);
  const std::uint64_t flash = u64(plan_json(run + "flash")["activation_bytes"]);
  const std::uint64_t eager = u64(plan_json(run + "eager")["activation_bytes"]);
  EXPECT_EQ(sdpa - flash, 32ull * 2 * 4096 * 4096);
  EXPECT_GT(eager, sdpa + 32ull * 6 * 32 * 4096 * 4096 / 2);  // eager keeps 6 bytes a score
  EXPECT_EQ(u64(plan_json(run + "flash_attention_2")["activation_bytes"]), flash);
}

TEST(FirstAnswer, ActivationsDominatingIsNotWorthZeroOnlyWhenDpFitsOnceTheyAreCut) {
  // The newcomer's Llama-3-8B on 8 x A100 40GB at 4096 tokens: activations outweigh DP's
  // 128 GB of model state, but DP cannot fit whatever is cut: ZeRO is needed, and said so.
  const Result r = zerodp(
      "plan --wide --model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 4096 --micro-batch 1 "
      "--attention eager");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(has(r.out, "not worth it")) << r.out;
  EXPECT_TRUE(has(r.out,
                  "Cutting them is not enough: DP does not fit at N = 8 even with "
                  "--checkpointing full --attention flash"))
      << r.out;
  // The seed's tiny model on a 16 GB card: DP fits as planned, so ZeRO is not worth it.
  const Result tiny =
      zerodp("plan --wide --params 50M --gpus 8 --activations 12GB --gpu-memory 16GB");
  EXPECT_TRUE(has(tiny.out, "ZeRO is not worth it here: DP already fits at N = 8.")) << tiny.out;
  // On 12.5 GB, DP (0.8 + 12 GB) does not fit; its model state alone would.
  const auto j = plan_json("--params 50M --gpus 8 --activations 12GB --gpu-memory 12.5GB");
  EXPECT_TRUE(j["dp_fits_with_activations_cut"].get<bool>());
  EXPECT_FALSE(j["stages"][0]["fits"].get<bool>());
}

TEST(FirstAnswer, TightIsThePeakWithinTheMeasuredErrorOnEitherSide) {
  // The band has two sides, the planner's measured errors: 11 % under, 11 % over. A peak P on
  // memory M fits when 1.11 P <= M, does not fit when P > 1.11 M.
  // ZeRO-2 of Llama-3-8B at 4096 tokens, full checkpointing and flash: 42,496,... bytes.
  const std::string run =
      "--model llama-3-8b --gpus 8 --seq-len 4096 --micro-batch 1 --checkpointing full "
      "--attention flash --stage 2 --gpu-memory ";
  const auto at = [&](const std::string& memory) { return plan_json(run + memory); };
  const std::uint64_t peak = u64(at("80GB")["stages"][2]["total_bytes"]);
  const auto bytes = [](std::uint64_t b) { return std::to_string(b) + "B"; };
  const std::uint64_t fits_from = (peak * 111 + 99) / 100;  // the least M with 111 P <= 100 M
  EXPECT_EQ(at(bytes(fits_from))["stages"][2]["verdict"], "fits");
  EXPECT_EQ(at(bytes(fits_from - 1))["stages"][2]["verdict"], "tight");
  EXPECT_EQ(at(bytes(peak))["stages"][2]["verdict"], "tight");
  const std::uint64_t misses_below = (peak * 100 + 110) / 111;  // 100 P > 111 M below this M
  EXPECT_EQ(at(bytes(misses_below))["stages"][2]["verdict"], "tight");
  EXPECT_EQ(at(bytes(misses_below - 1))["stages"][2]["verdict"], "does_not_fit");
  EXPECT_TRUE(at(bytes(peak))["stages"][2]["fits"].get<bool>());
  EXPECT_FALSE(at(bytes(peak - 1))["stages"][2]["fits"].get<bool>());
  // The seed's own figures are exact arithmetic: no band, 2800/47 GB fits 60 GB.
  const auto seed = plan_json("--params 175B --gpus 47 --gpu-memory 80GB --activations 20GB");
  EXPECT_TRUE(seed["tight_band"].is_null());
  const auto band = at("80GB")["tight_band"];
  EXPECT_EQ(band["under"].get<double>(), 0.11);
  EXPECT_EQ(band["over"].get<double>(), 0.11);
  EXPECT_EQ(seed["stages"][3]["verdict"], "fits");
  EXPECT_EQ(
      plan_json(
          "--params 175B --gpus 46 --gpu-memory 80GB --activations 20GB")["stages"][3]["verdict"],
      "does_not_fit");
}

TEST(FirstAnswer, WithoutGpusTheFewestThatFitWithTheMargin) {
  // "How many H100s for Llama-3-70B at 4096 tokens?": none as planned (8 x 4096 tokens of
  // activations fill a card), fewer with checkpointing, flash and a smaller batch, each N the
  // least whose verdict is "fits".
  const std::string run = "--model llama-3-70b --gpu h100-80gb --seq-len 4096";
  const Result r = zerodp("plan --wide " + run);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "What would fit: as planned, no number of GPUs; fewer GPUs with "
                  "--checkpointing full --attention flash --micro-batch 1"))
      << r.out;
  const auto j = plan_json(run);
  ASSERT_FALSE(j["fewest_gpus"].is_null());
  EXPECT_TRUE(j["fewest_gpus"]["as_planned"].is_null());
  const auto& best = j["fewest_gpus"]["with_changes"][0];
  EXPECT_EQ(best["change"], "--checkpointing full --attention flash --micro-batch 1");
  EXPECT_EQ(best["stage"], 3);
  const std::uint64_t n = best["gpus"].get<std::uint64_t>();
  const std::string there = run + " --checkpointing full --attention flash --micro-batch 1 --gpus ";
  EXPECT_EQ(plan_json(there + std::to_string(n))["stages"][3]["verdict"], "fits");
  EXPECT_NE(plan_json(there + std::to_string(n - 1))["stages"][3]["verdict"], "fits");
  EXPECT_EQ(u64(best["total_bytes"]),
            u64(plan_json(there + std::to_string(n))["stages"][3]["total_bytes"]));
}

TEST(FirstAnswer, TheHostMemoryAnOffloadNeedsIsChecked) {
  // Mistral-7B, ZeRO-3 with params and optimizer on the CPU, 4 x RTX 4090 on one 64 GB host:
  // the host would hold 4 x (2 + 12 + 4 + 2) bytes x 7.24B / 4 = 145 GB.
  const std::string run =
      "--model mistral-7b --deepspeed-config " ZERODP_SOURCE_DIR
      "/examples/ds_zero3_offload.json --gpus 4 "
      "--gpu rtx-4090 --seq-len 1024 --micro-batch 1 --checkpointing full --host-memory ";
  const auto small = plan_json(run + "64GB");
  const std::uint64_t phi = 7'241'732'096, shard = (phi + 3) / 4;
  EXPECT_EQ(u64(small["stages"][3]["host_bytes_per_node"]), 4 * 20 * shard);
  EXPECT_FALSE(small["stages"][3]["host_fits"].get<bool>());
  EXPECT_EQ(small["stages"][3]["verdict"], "does_not_fit");
  const Result r = zerodp("plan --wide " + run + "64GB");
  EXPECT_TRUE(has(r.out, "the offload's host memory 145 GB per node > 64.0 GB")) << r.out;
  EXPECT_TRUE(has(r.out,
                  "The host cannot hold the offload (it needs 145 GB per node); with nothing "
                  "offloaded, what would fit: "))
      << r.out;
  // Fewer activations do not help a host that is full: no such change is offered.
  EXPECT_TRUE(small["what_would_fit"].empty());
  const auto large = plan_json(run + "256GB");
  EXPECT_TRUE(large["stages"][3]["host_fits"].get<bool>());
  EXPECT_NE(large["stages"][3]["verdict"], "does_not_fit");
  EXPECT_EQ(zerodp("plan --wide " + run + "64XB").status, 2);
}

// Issue 51's contradictions, each asked as the user asked it: one question, one count.
TEST(OneAnswer, WhatWouldFitOffersTheLeastNThatTheSameQuestionAnswers) {
  // Gemma-2-9B on L4s under FSDP: "what would fit" offers a change on some N; asked with that
  // change, the plan's least N for that stage is the same N, and its verdict there is yes.
  const std::string run = "--model gemma-2-9b --gpus 8 --gpu l4 --framework fsdp";
  const auto j = plan_json(run);
  ASSERT_FALSE(j["what_would_fit"].empty()) << j.dump();
  const auto& offer = j["what_would_fit"][0];
  const std::string change = offer["change"];
  const auto with = plan_json(run + " " + change);
  const int stage = offer["stage"];
  EXPECT_EQ(u64(with["stages"][stage]["min_gpus"]), u64(offer["gpus"])) << change;
  const auto there = plan_json("--model gemma-2-9b --gpus " + std::to_string(u64(offer["gpus"])) +
                               " --gpu l4 --framework fsdp " + change);
  EXPECT_EQ(there["stages"][stage]["verdict"], "fits") << change;
  // A stage within the band is tight, never the cheapest stage that fits.
  const auto tight = plan_json(
      "--model llama-3-8b --gpus 8 --gpu-memory 40GB --seq-len 4096 --micro-batch 1 "
      "--checkpointing full --attention flash");
  ASSERT_FALSE(tight["cheapest_fitting_stage"].is_null());
  const int cheapest = tight["cheapest_fitting_stage"];
  EXPECT_EQ(tight["stages"][cheapest]["verdict"], "fits");
  ASSERT_FALSE(tight["tight_stage"].is_null());
  const int coin_toss = tight["tight_stage"];
  EXPECT_LT(coin_toss, cheapest);
  EXPECT_EQ(tight["stages"][coin_toss]["verdict"], "tight");
}

TEST(OneAnswer, DeepSpeedsEstimateLeavesZerodpsOwnAnswerAsItWas) {
  // Mistral-7B with a ZeRO-3 offload config on 4 x RTX 4090 and a 64 GB host: asking for
  // DeepSpeed's estimate beside the plan changes nothing of the plan (its node, its least N).
  const std::string run =
      "--model mistral-7b --gpus 4 --gpu rtx-4090 --host-memory 64GB "
      "--deepspeed-config " ZERODP_SOURCE_DIR "/examples/ds_zero3_offload.json";
  const auto alone = plan_json(run);
  const auto beside = plan_json(run + " --estimator deepspeed");
  EXPECT_EQ(alone["stages"], beside["stages"]);
  EXPECT_EQ(alone["inputs"], beside["inputs"]);
  EXPECT_EQ(alone["notes"], beside["notes"]);
  // Its "without offload" line gives zerodp's model state with nothing offloaded.
  const Result r = zerodp("plan --wide " + run + " --estimator deepspeed");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto plain = plan_json("--model mistral-7b --gpus 4 --gpu rtx-4090");
  const auto gb = [](std::uint64_t b) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GB", double(b) / 1e9);
    return std::string(text);
  };
  EXPECT_TRUE(has(r.out, "without offload: ZeRO-2 " +
                             gb(u64(plain["stages"][2]["model_state_bytes"])) + ", ZeRO-3 " +
                             gb(u64(plain["stages"][3]["model_state_bytes"]))))
      << r.out;
}

TEST(OneAnswer, TheLargestModelIsOneWhoseOffloadTheHostHolds) {
  const std::string run = "--gpus 4 --gpu rtx-3090 --offload-optimizer cpu";
  const auto unbounded = plan_json(run);
  const auto bounded = plan_json(run + " --host-memory 128GB");
  const std::uint64_t largest = u64(bounded["stages"][3]["max_params"]);
  EXPECT_LT(largest, u64(unbounded["stages"][3]["max_params"]));
  // That model planned on the same GPUs and host fits, GPU and host; one more does not.
  const auto at = plan_json(run + " --host-memory 128GB --params " + std::to_string(largest));
  EXPECT_EQ(at["stages"][3]["verdict"], "fits");
  EXPECT_EQ(at["stages"][3]["host_fits"], true);
  const auto more = plan_json(run + " --host-memory 128GB --params " + std::to_string(largest + 1));
  EXPECT_EQ(more["stages"][3]["host_fits"], false);
}

TEST(OneAnswer, FsdpsRowSaysItsOwnOptimizerStepAndCellDKeepsItsWord) {
  const Result fsdp = zerodp("plan --wide --model gemma-2-9b --gpus 8 --gpu l4 --framework fsdp");
  ASSERT_EQ(fsdp.status, 0) << fsdp.err;
  EXPECT_TRUE(has(fsdp.out,
                  "optimizer step: fused in the DP, ZeRO-1 and ZeRO-2 rows (DeepSpeed's "
                  "FusedAdam, the default); foreach in ZeRO-3's, FSDP's (torch.optim.AdamW"))
      << fsdp.out;
  // The seed's Example 4: 50M parameters, 12 GB of activations, no card named.
  const Result d = zerodp("plan --wide --params 50M --gpus 8 --activations 12GB");
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_TRUE(has(d.out, "ZeRO-3 saves only 5.5 %")) << d.out;
  EXPECT_TRUE(has(d.out, "ZeRO is not worth it here: DP's model state fits even the smallest GPU"))
      << d.out;
}

TEST(OneAnswer, TheAnswerComesFirstInTwelveLinesOfEightyColumns) {
  // The question the README opens with, and the same without N: the first lines are the
  // answer (the verdict per stage, the cheapest stage, the fewest GPUs, the first change), each
  // within 80 columns, before the header and the tables; the JSON carries them as printed.
  for (const std::string run :
       {"--model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 4096 --micro-batch 1",
        "--model llama-3-8b --gpu a100-40gb --seq-len 4096 --micro-batch 1",
        "--params 10B --gpus 4 --gpu-memory 24GB --activations 6GB"}) {
    const Result r = zerodp("plan " + run);
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string first = r.out.substr(0, r.out.find("\n\n"));
    std::vector<std::string> lines;
    for (std::size_t at = 0; at <= first.size();) {
      const std::size_t end = std::min(first.find('\n', at), first.size());
      lines.push_back(first.substr(at, end - at));
      at = end + 1;
    }
    EXPECT_LE(lines.size(), 12u) << first;
    for (const std::string& line : lines) EXPECT_LE(line.size(), 80u) << line;
    EXPECT_EQ(lines[0].rfind("Answer: ", 0), 0u) << first;
    const auto j = plan_json(run);
    ASSERT_EQ(j["answer"]["lines"].size(), lines.size());
    for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(j["answer"]["lines"][i], lines[i]);
  }
  // The seed's Example 8 answers as the seed does: nothing fits at N = 4, ZeRO-3 from N = 9.
  const auto h = plan_json("--params 10B --gpus 4 --gpu-memory 24GB --activations 6GB");
  EXPECT_EQ(h["answer"]["verdict"], "does_not_fit");
  EXPECT_EQ(h["answer"]["headline"], "No stage fits at N = 4. Fewest GPUs: ZeRO-3 on N = 9.");
  // Without a GPU memory there is no answer to give first: the table is the answer.
  const Result a = zerodp("plan --params 1e9 --gpus 8");
  EXPECT_EQ(a.out.rfind("zerodp plan: ", 0), 0u) << a.out;
}

TEST(OneAnswer, WithNFixedOtherOffloadsAreWeighedWithTheirHost) {
  // Mistral-7B, a ZeRO-3 config offloading optimizer and params to a 64 GB host that cannot
  // hold them (145 GB): the optimizer to NVMe, params on the GPU, fits on the same 4 GPUs, its
  // host share within the 64 GB; planned so by hand, the verdict is yes, the host holds it.
  const auto j = plan_json(
      "--model mistral-7b --gpus 4 --gpu rtx-4090 --host-memory 64GB "
      "--deepspeed-config " ZERODP_SOURCE_DIR "/examples/ds_zero3_offload.json");
  ASSERT_FALSE(j["offloads_that_fit"].empty()) << j["notes"].dump();
  const auto& o = j["offloads_that_fit"][0];
  EXPECT_EQ(o["offload_optimizer"], "nvme");
  EXPECT_EQ(o["offload_params"], "none");
  EXPECT_EQ(o["stage"], 3);
  EXPECT_LE(u64(o["host_bytes_per_node"]), 64'000'000'000u);
  const std::string change = o["activation_change"].is_null() ? "" : o["activation_change"];
  const auto by_hand = plan_json(
      "--model mistral-7b --gpus 4 --gpu rtx-4090 --host-memory 64GB --stage 3 "
      "--offload-optimizer nvme " +
      change);
  EXPECT_EQ(by_hand["stages"][3]["verdict"], "fits");
  EXPECT_EQ(by_hand["stages"][3]["host_fits"], true);
  // (Its peak differs from the config's by the buffers the config sizes from the model.)
  // The answer's first change is that one.
  std::string answer;
  for (const auto& line : j["answer"]["lines"]) answer += std::string(line) + "\n";
  EXPECT_NE(answer.find("First change that fits: --offload-optimizer nvme"), std::string::npos)
      << answer;
}

// A question as flags; a change ("--checkpointing full --micro-batch 1") replaces its flags.
std::string with_change(std::map<std::string, std::string> flags, const std::string& change) {
  std::istringstream words(change);
  for (std::string flag, value; words >> flag >> value;) flags[flag] = value;
  std::string out;
  for (const auto& [flag, value] : flags) out += " " + flag + (value.empty() ? "" : " " + value);
  return out;
}

TEST(OneAnswer, PublishedModelsUnderFsdpAndDeepSpeedAgreeWithThemselves) {
  // The property test of tests/report/ with the front end's own inputs: published models, cards,
  // FSDP or DeepSpeed's config, DeepSpeed's estimate beside it. For each random question, every
  // count the plan names (a stage's least N, the cheapest stage, a change on N GPUs) is one
  // whose verdict, asked again, is `fits`; the estimate changes none of it.
  std::mt19937 rng(5);
  const char* models[] = {"llama-3-8b", "mistral-7b", "qwen2.5-7b", "gemma-2-9b", "llama-2-13b"};
  const char* gpus[] = {"a100-40gb", "a100-80gb", "rtx-4090", "l4", "h100-80gb"};
  int offers = 0;
  for (int q = 0; q < 24; ++q) {
    std::map<std::string, std::string> flags = {{"--model", models[rng() % 5]},
                                                {"--gpu", gpus[rng() % 5]},
                                                {"--seq-len", std::to_string(512 << (rng() % 4))},
                                                {"--micro-batch", std::to_string(1 << (rng() % 3))},
                                                {"--gpus", std::to_string(1 + rng() % 16)}};
    switch (rng() % 3) {
      case 0:
        flags["--framework"] = "fsdp";
        break;
      case 1:
        flags["--deepspeed-config"] = ZERODP_SOURCE_DIR "/examples/ds_zero3_offload.json";
        flags["--host-memory"] = "256GB";
        break;
      default:
        break;
    }
    const std::uint64_t n = std::stoull(flags["--gpus"]);
    const std::string run = with_change(flags, "");
    SCOPED_TRACE(run);
    const auto j = plan_json(run);
    EXPECT_EQ(j["stages"], plan_json(run + " --estimator deepspeed")["stages"]);
    std::optional<int> first_fit;
    for (int stage = 0; stage < 4; ++stage) {
      const auto& s = j["stages"][stage];
      if (!first_fit && s["verdict"] == "fits") first_fit = stage;
      if (s["verdict"] == "fits") {
        EXPECT_LE(u64(s["min_gpus"]), n) << stage;
      } else if (!s["min_gpus"].is_null()) {
        EXPECT_GT(u64(s["min_gpus"]), n) << stage;
      }
    }
    const std::optional<int> cheapest = j["cheapest_fitting_stage"].is_null()
                                            ? std::nullopt
                                            : std::optional<int>(j["cheapest_fitting_stage"]);
    EXPECT_EQ(cheapest, first_fit);
    for (const auto& c : j["what_would_fit"]) {
      ++offers;
      const int stage = c["stage"];
      flags["--gpus"] = std::to_string(u64(c["gpus"]));
      const auto again = plan_json(with_change(flags, c["change"]));
      flags["--gpus"] = std::to_string(n);
      EXPECT_EQ(again["stages"][stage]["verdict"], "fits") << c.dump();
    }
  }
  EXPECT_GT(offers, 3);
}

}  // namespace
