// The optimizers of the table of state slots, as a planner user names them: zerodp's words,
// the Hugging Face Trainer's `optim` names and a DeepSpeed config's optimizer.type; and the
// seed's remedy for cell H, a memory-efficient optimizer, offered when no stage fits.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

using testing::CliResult;
using testing::line_count;
using testing::plan_json;
using testing::run_zerodp;

const std::string kAnyN = "--params 1e10 --gpu-memory 24GB --activations 6GB";
const std::string kExample8 = kAnyN + " --gpus 4";

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The seed's Example 8: no stage fits 10B on 4 x 24 GB, and ZeRO-3 needs 9 GPUs with Adam.
// 8-bit AdamW shrinks the 12-byte block to 6 bytes and 8 bytes a block of 256: 6 GPUs.
TEST(PlanOptimizers, TheSeedsCellHRemedyIsOfferedAndFitsWhenAskedAgain) {
  const nlohmann::json j = plan_json(kExample8);
  ASSERT_TRUE(j["cheapest_fitting_stage"].is_null());
  EXPECT_EQ(j["stages"][3]["min_gpus"], 9);
  const nlohmann::json& fit = j["optimizers_that_fit"];
  ASSERT_GE(fit.size(), 1u) << j.dump(2);
  EXPECT_EQ(fit[0]["optimizer"], "adamw-8bit");
  EXPECT_EQ(fit[0]["stage"], 3);
  EXPECT_EQ(fit[0]["gpus"], 6);
  EXPECT_TRUE(mentions(j["answer"]["lines"].back().get<std::string>(),
                       "First change that fits: --optimizer adamw-8bit (ZeRO-3 on N = 6"))
      << j["answer"].dump(2);
  // Asked again as offered: ZeRO-3 fits on 6 GPUs with 8-bit AdamW and not on 5; its bytes are
  // the 2 + 2 + 6 an element and 8 a block of 256 of the 2.5e9-element shard... of 1e10 / 6.
  const nlohmann::json six = plan_json(kAnyN + " --optimizer adamw-8bit --gpus 6");
  EXPECT_EQ(six["stages"][3]["verdict"], "fits");
  const std::uint64_t shard = (10'000'000'000ull + 5) / 6;
  EXPECT_EQ(six["stages"][3]["model_state_bytes"].get<std::uint64_t>(),
            10 * shard + (shard + 255) / 256 * 8);
  EXPECT_EQ(six["stages"][3]["total_bytes"], fit[0]["total_bytes"]);
  EXPECT_EQ(plan_json(kAnyN + " --optimizer adamw-8bit --gpus 5")["stages"][3]["verdict"],
            "does_not_fit");
  // Every offer is planned again as it says, and fits.
  for (const nlohmann::json& offer : fit) {
    const nlohmann::json again =
        plan_json(kAnyN + " --optimizer " + offer["optimizer"].get<std::string>() + " --gpus " +
                  std::to_string(offer["gpus"].get<int>()));
    EXPECT_EQ(again["stages"][offer["stage"].get<int>()]["verdict"], "fits") << offer.dump();
  }
}

TEST(PlanOptimizers, TheTrainersNamesAndTheirBytes) {
  const nlohmann::json bnb = plan_json(kExample8 + " --optimizer adamw_bnb_8bit");
  EXPECT_EQ(bnb["optimizer"]["name"], "adamw-8bit");
  EXPECT_EQ(bnb["bytes_per_param"]["optimizer"], 6);
  EXPECT_EQ(bnb["bytes_per_param"]["optimizer_block"]["elements"], 256);
  EXPECT_EQ(bnb["bytes_per_param"]["optimizer_block"]["bytes"], 8);
  EXPECT_EQ(bnb["bytes_per_param"]["optimizer_32bit_below"]["elements"], 4096);
  EXPECT_EQ(bnb["optimizer"]["slots"][0]["format"], "int8 block-wise");
  const nlohmann::json lion = plan_json(kExample8 + " --optimizer lion_32bit");
  EXPECT_EQ(lion["bytes_per_param"]["optimizer"], 8);
  EXPECT_TRUE(lion["bytes_per_param"]["optimizer_block"].is_null());
  const nlohmann::json bf16 = plan_json(kExample8 + " --optimizer adamw-bf16");
  EXPECT_EQ(bf16["bytes_per_param"]["total"], 8);
  EXPECT_FALSE(bf16["optimizer"]["fp32_master"].get<bool>());
  // torchtune's 8-bit AdamW on bf16 params: 2 + 2 + 2 and the blocks, no master; a plan that
  // assumes the precision says it is pure bf16, not mixed with a master.
  const nlohmann::json bf16_8bit = plan_json(kExample8 + " --optimizer paged-adamw-8bit-bf16");
  EXPECT_EQ(bf16_8bit["bytes_per_param"]["total"], 6);
  EXPECT_EQ(bf16_8bit["bytes_per_param"]["optimizer_block"]["bytes"], 8);
  EXPECT_FALSE(bf16_8bit["optimizer"]["fp32_master"].get<bool>());
  const CliResult pure = run_zerodp("plan --model llama-3-8b --gpus 1 --optimizer adamw-8bit-bf16");
  EXPECT_EQ(pure.status, 0) << pure.err;
  EXPECT_NE(pure.out.find("--precision bf16 (pure: the optimizer keeps no fp32 master)"),
            std::string::npos)
      << pure.out;
  EXPECT_NE(pure.out.find("(pure bf16, 8-bit AdamW on bf16 params"), std::string::npos) << pure.out;
  // A Trainer name that says how AdamW steps sets the step's temporaries; a contradiction is
  // one line.
  const std::string model = "--model llama-3-8b --gpus 8 --gpu a100-80gb ";
  const nlohmann::json fused = plan_json(model + "--optimizer adamw_torch_fused");
  EXPECT_EQ(fused["inputs"]["optimizer_impl"], "fused");
  EXPECT_EQ(plan_json(model + "--optimizer adamw_hf")["inputs"]["optimizer_impl"], "single");
  const CliResult both = run_zerodp("plan " + model +
                                    "--optimizer adamw_torch_fused "
                                    "--optimizer-impl single");
  EXPECT_EQ(both.status, 2) << both.err;
  EXPECT_TRUE(mentions(both.err, "--optimizer-impl: 'single' contradicts --optimizer")) << both.err;
  EXPECT_EQ(line_count(both.err), 1u);
}

// Adafactor's step makes two fp32 copies of the flat shard (transformers' Adafactor): the
// peak counts them where DeepSpeed's FusedAdam counts none.
TEST(PlanOptimizers, AdafactorsStepTemporariesAreInThePeak) {
  const std::string model = "--model llama-3-8b --gpus 8 --gpu a100-80gb --stage 2 ";
  const nlohmann::json adam = plan_json(model);
  const nlohmann::json adafactor = plan_json(model + "--optimizer adafactor");
  const std::uint64_t phi = adam["model"]["params"].get<std::uint64_t>();
  const std::uint64_t shard = (phi + 7) / 8;
  EXPECT_EQ(adam["stages"][2]["peak"]["optimizer_temp_bytes"], 0);
  EXPECT_EQ(adafactor["stages"][2]["peak"]["optimizer_temp_bytes"].get<std::uint64_t>(),
            2 * 4 * shard);
  EXPECT_EQ(adafactor["bytes_per_param"]["optimizer"], 8);  // master 4, unfactored v 4
}

TEST(PlanOptimizers, WhatCannotBeCountedIsRefusedInOneLine) {
  struct Case {
    std::string args, says;
  };
  for (const Case& c :
       {Case{"--params 7B --optimizer galore_adamw",
             "--optimizer: 'galore_adamw' is not counted: GaLore"},
        Case{"--params 7B --optimizer adamw_9bit", "--optimizer: expected adam, adamw-8bit, "},
        Case{"--params 7B --optimizer adamw-bf16 --precision fp16",
             "--optimizer: adamw-bf16 is pure-bf16 training"},
        Case{"--model llama-3-8b --framework fsdp --optimizer adamw-8bit",
             "--optimizer adamw-8bit: not planned with --framework fsdp"}}) {
    const CliResult r = run_zerodp("plan --gpus 8 --gpu-memory 80GB " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.err;
    EXPECT_TRUE(mentions(r.err, c.says)) << c.args << ": " << r.err;
    EXPECT_EQ(line_count(r.err), 1u) << r.err;
  }
}

TEST(PlanOptimizers, ADeepSpeedConfigsOptimizerTypeReadsTheTable) {
  const std::string dir = zerodp::testing::fresh_folder("ds_optimizers");
  const auto config = [&](const std::string& name, const std::string& type) {
    const std::string path = dir + "/" + name + ".json";
    std::ofstream(path) << R"({"zero_optimization": {"stage": 2}, "bf16": {"enabled": true},)"
                        << R"( "optimizer": {"type": ")" << type << R"("}})";
    return path;
  };
  // Without a model the config's buffers need --largest-layer: not what is tested here.
  const std::string asked = kExample8 + " --buffers none --deepspeed-config ";
  const nlohmann::json lion = plan_json(asked + config("lion", "Lion"));
  EXPECT_EQ(lion["optimizer"]["name"], "lion");
  EXPECT_EQ(lion["bytes_per_param"]["optimizer"], 8);
  const nlohmann::json lamb = plan_json(asked + config("lamb", "FusedLamb"));
  EXPECT_EQ(lamb["optimizer"]["name"], "lamb");
  // 1-bit Adam is read, said not counted, with why.
  const nlohmann::json onebit = plan_json(asked + config("onebit", "OneBitAdam"));
  EXPECT_TRUE(mentions(onebit["inputs"]["deepspeed_config_summary"].get<std::string>(),
                       "optimizer.type OneBitAdam (1-bit Adam keeps error-feedback buffers"))
      << onebit["inputs"]["deepspeed_config_summary"];
}

}  // namespace
}  // namespace zerodp
