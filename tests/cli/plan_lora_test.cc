// `zerodp plan` for LoRA and QLoRA runs, as a user types them: what trains, what stays frozen
// and where each stage keeps it, worked out by hand for Llama-2-7B; and every flag that does
// not apply refused in one line.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

using testing::expect_refused;
using testing::plan_json;
using testing::u64;

// Llama-2-7B: 6,738,415,616 parameters, 32 layers of hidden 4,096 and MLP 11,008; rank 8 on
// q_proj and v_proj trains 32·2·8·(4,096 + 4,096) = 4,194,304 (PEFT's count).
constexpr std::uint64_t kBase = 6'738'415'616, kAdapters = 4'194'304;
const std::string kLora = "--model llama-2-7b --gpus 8 --gpu a100-80gb --lora-rank 8";

TEST(PlanLora, TheAdaptersTrainAndTheBaseIsHeldLikeTheParams) {
  const nlohmann::json j = plan_json(kLora);
  EXPECT_EQ(j["inputs"]["params"], kAdapters);
  const nlohmann::json& l = j["lora"];
  EXPECT_EQ(l["rank"], 8);
  EXPECT_EQ(l["targets"], nlohmann::json({"q_proj", "v_proj"}));  // PEFT's default for llama
  EXPECT_EQ(l["adapter_params"], kAdapters);
  EXPECT_EQ(l["trained_params"], kAdapters);
  EXPECT_EQ(l["frozen_params"], kBase);
  EXPECT_EQ(l["frozen_bytes"], 2 * kBase);
  EXPECT_TRUE(l["quantize"].is_null());
  // 16 bytes a trained parameter; the base's 2 bytes whole below ZeRO-3, a ceiling's share at it.
  const std::uint64_t shard = kAdapters / 8, base_shard = (kBase + 7) / 8;
  const std::uint64_t want[4] = {16 * kAdapters + 2 * kBase, 4 * kAdapters + 12 * shard + 2 * kBase,
                                 2 * kAdapters + 14 * shard + 2 * kBase,
                                 16 * shard + 2 * base_shard};
  for (int s = 0; s < 4; ++s) {
    const nlohmann::json& st = j["stages"][s];
    EXPECT_EQ(st["model_state_bytes"], want[s]) << s;
    EXPECT_EQ(st["frozen_bytes"], s == 3 ? 2 * base_shard : 2 * kBase) << s;
    EXPECT_EQ(st["peak"]["model_state_bytes"], want[s]) << s;
  }
  EXPECT_EQ(j["stages"][3]["floor_bytes"], 0);
  EXPECT_EQ(j["stages"][0]["floor_bytes"], 16 * kAdapters + 2 * kBase);
  // Below ZeRO-3 only the adapters' gradients are reduced; ZeRO-3 gathers the base twice:
  // seed ((2P + G)·Φ + 2P·base)·(N − 1)/N.
  EXPECT_EQ(j["stages"][0]["comm_bytes_per_gpu"]["seed"], 2 * kAdapters * 7 / 8);
  EXPECT_EQ(j["stages"][3]["comm_bytes_per_gpu"]["seed"], (6 * kAdapters + 4 * kBase) * 7 / 8);
  // The peak's terms are the adapters': a bucket of their gradients at stage 0, an adapter's
  // whole gradient (8 x 4,096) waiting at stage 2.
  EXPECT_EQ(j["stages"][0]["peak"]["reduce_buffer_bytes"], 2 * kAdapters);
  EXPECT_EQ(j["stages"][2]["peak"]["layer_grad_bytes"], 2 * 8 * 4096);
  EXPECT_EQ(j["stages"][2]["peak"]["step_fp32_grad_bytes"], 4 * shard);
  // Its step is predicted: ZeRO-3 gathers the base beside the adapters, for the forward and
  // again for the backward, 2 bytes an element over the ring: 2 (N − 1)/N of it each.
  const nlohmann::json& step = j["stages"][3]["step"];
  ASSERT_TRUE(step.is_object()) << j["inputs"]["step_not_predicted"];
  std::uint64_t base_gathers = 0;
  for (const nlohmann::json& c : step["collectives"]) {
    if (c["name"] == "base forward gather" || c["name"] == "base backward gather") {
      EXPECT_EQ(c["intra_bytes"], 2 * kBase * 7 / 8) << c["name"];
      base_gathers += 1;
    }
  }
  EXPECT_EQ(base_gathers, 2u);
  for (int s = 0; s < 3; ++s) {
    for (const nlohmann::json& c : j["stages"][s]["step"]["collectives"]) {
      EXPECT_EQ(c["name"].get<std::string>().rfind("base ", 0), std::string::npos) << s;
    }
  }
  // For people: what trains and what is frozen, and where each stage keeps the base.
  const testing::CliResult text = testing::run_zerodp("plan " + kLora + " --wide");
  ASSERT_EQ(text.status, 0) << text.err;
  for (const char* line :
       {"zerodp plan: trained params = 4.19M, N = 8",
        "LoRA: rank 8 on q_proj, v_proj (alpha 8, dropout 0): 4,194,304 adapter parameters train; "
        "the base's 6,738,415,616 are frozen, 13.5 GB in 16 bits",
        "frozen base: whole on every GPU below ZeRO-3, sharded at ZeRO-3"}) {
    EXPECT_TRUE(text.has(line)) << line << "\n" << text.out;
  }
  // A full fine-tune has no frozen base.
  const nlohmann::json full = plan_json("--model llama-2-7b --gpus 8 --gpu a100-80gb");
  EXPECT_TRUE(full["lora"].is_null());
  EXPECT_TRUE(full["stages"][0]["frozen_bytes"].is_null());
}

// A LoRA run's step from its FLOPs (catalog/lora.h's lora_training_flops: no weight gradient
// of the base) at the card's rate: less compute than the full fine-tune's, the same at every
// stage, and K micro-steps K times it. QLoRA's dequantization is not timed: no step, saying why.
TEST(PlanLora, TheStepComputesNoWeightGradientOfTheBase) {
  const std::string run =
      "--model llama-2-7b --gpus 8 --gpu h100-80gb --seq-len 2048 "
      "--micro-batch 4 --checkpointing full ";
  const nlohmann::json full = plan_json(run);
  const nlohmann::json lora = plan_json(run + "--lora-rank 16 --lora-targets all-linear");
  const nlohmann::json accum =
      plan_json(run + "--lora-rank 16 --lora-targets all-linear --grad-accum 4");
  const auto compute = [](const nlohmann::json& j, int s) {
    const nlohmann::json& step = j["stages"][s]["step"];
    return step["forward_seconds"].get<double>() + step["backward_seconds"].get<double>();
  };
  // N = 6,607,343,616 products a token (the embeddings apart), A = 32 layers' attention:
  // the full fine-tune computes 8 N + 4 L A with full checkpointing, LoRA 6 N + 4 L A + 8 P.
  const double n = 6'607'343'616.0, la = 32 * 4.0 * 2048 * 4096,
               p = 16.0 * (32 * (4 * (4096 + 4096) + 2 * (4096 + 11008) + (11008 + 4096)));
  const double want = (6 * n + 4 * la + 8 * p) / (8 * n + 4 * la);
  for (int s = 0; s < 4; ++s) {
    EXPECT_NEAR(compute(lora, s) / compute(full, s), want, 1e-12) << s;
    EXPECT_NEAR(compute(accum, s) / compute(lora, s), 4, 1e-12) << s;
  }
  EXPECT_LT(lora["stages"][0]["step_seconds"].get<double>(),
            full["stages"][0]["step_seconds"].get<double>());
  const nlohmann::json qlora = plan_json(run + "--lora-rank 16 --quantize nf4");
  EXPECT_TRUE(qlora["stages"][0]["step"].is_null());
  EXPECT_NE(qlora["inputs"]["step_not_predicted"].get<std::string>().find("QLoRA"),
            std::string::npos);
}

TEST(PlanLora, QloraKeepsTheCodesShardedAndTheirStateWhole) {
  const nlohmann::json j =
      plan_json(kLora + " --lora-targets all-linear --quantize nf4 --checkpointing full");
  const nlohmann::json& l = j["lora"];
  // Every linear but the head in NF4: 32·(4·4,096² + 3·4,096·11,008) weights, a byte for two
  // codes; rank 8 on all seven linears of each layer.
  const std::uint64_t quantized = 32ull * (4 * 4096 * 4096 + 3 * 4096 * 11008);
  EXPECT_EQ(l["quantize"], "nf4");
  EXPECT_EQ(l["quantized_params"], quantized);
  EXPECT_EQ(l["adapter_params"], 32ull * 8 * (4 * (4096 + 4096) + 3 * (4096 + 11008)));
  const nlohmann::json& parts = l["frozen_parts"];
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0]["elements"], quantized / 2);
  EXPECT_EQ(parts[0]["sharded_by_zero3"], true);
  // Per weight of n elements in blocks of 64: a byte a block, 4 bytes a block of 256 of those,
  // the 1,024-byte map, the 4-byte offset and the 64-byte NF4 table.
  const std::uint64_t attention = 4096 * 4096 / 64, mlp = 4096 * 11008 / 64;
  const auto state = [](std::uint64_t blocks) {
    return blocks + 4 * ((blocks + 255) / 256) + 1092;
  };
  EXPECT_EQ(parts[1]["elements"], 32 * (4 * state(attention) + 3 * state(mlp)));
  EXPECT_EQ(parts[1]["sharded_by_zero3"], false);
  EXPECT_EQ(parts[2]["elements"], kBase - quantized);  // embeddings, norms, head in 16 bits
  EXPECT_EQ(parts[2]["element_bytes"], 2);
  const std::uint64_t kept = u64(parts[2]["elements"]), st = u64(parts[1]["elements"]);
  EXPECT_EQ(j["stages"][0]["frozen_bytes"], quantized / 2 + st + 2 * kept);
  EXPECT_EQ(j["stages"][3]["frozen_bytes"], (quantized / 2 + 7) / 8 + st + 2 * ((kept + 7) / 8));
  EXPECT_EQ(j["stages"][3]["floor_bytes"], st);
  // The MLP's 4,096 x 11,008 weight, dequantized to 16 bits for its product.
  EXPECT_EQ(j["stages"][0]["peak"]["dequantized_weight_bytes"], 2 * 4096 * 11008);
  EXPECT_EQ(l["double_quant"], true);

  // Without double quantization (bitsandbytes' default) each block's absmax is an fp32 and
  // the table of 64 bytes the whole state of a weight; the codes and the rest are unchanged.
  const nlohmann::json off = plan_json(kLora +
                                       " --lora-targets all-linear --quantize nf4 "
                                       "--double-quant off --checkpointing full");
  EXPECT_EQ(off["lora"]["double_quant"], false);
  const nlohmann::json& off_parts = off["lora"]["frozen_parts"];
  EXPECT_EQ(off_parts[0]["elements"], quantized / 2);
  EXPECT_EQ(off_parts[1]["elements"], 32 * (4 * (4 * attention + 64) + 3 * (4 * mlp + 64)));
  EXPECT_EQ(off_parts[2]["elements"], kept);
  EXPECT_EQ(off["stages"][0]["frozen_bytes"],
            quantized / 2 + u64(off_parts[1]["elements"]) + 2 * kept);
}

// FSDP as PEFT wraps a LoRA model (fsdp_auto_wrap_policy): the layers and each adapter units of
// their own. ZeRO-3's row gathers the frozen root (embeddings, final norm, head) and two frozen
// layers at their own bytes, and two adapters; the gradients are the adapters'.
TEST(PlanLora, FsdpGathersTheFrozenBaseUnitByUnit) {
  const std::string run =
      "--model llama-2-7b --gpus 8 --gpu a100-80gb --framework fsdp --stage 3 --seq-len 2048 "
      "--micro-batch 1 --checkpointing full --lora-rank 8";
  const nlohmann::json j = plan_json(run);
  const nlohmann::json& peak = j["stages"][3]["peak"];
  const std::uint64_t root = 2ull * 32000 * 4096 + 4096;  // two embeddings, the final norm
  const std::uint64_t layer = 4ull * 4096 * 4096 + 3ull * 4096 * 11008 + 2 * 4096;
  const std::uint64_t adapter = 8ull * 4096;  // q's and v's lora_A and lora_B alike
  EXPECT_EQ(u64(peak["gathered_param_bytes"]), 2 * root + 2 * 2 * layer + 2 * 2 * adapter);
  EXPECT_EQ(u64(peak["layer_grad_bytes"]), 2 * adapter);
  // The adapters' fp32 gradient shards, made in the backward (FSDP's MixedPrecision keeps fp32
  // shards): 4 bytes of ceil(4,194,304 / 8).
  EXPECT_EQ(u64(peak["deferred_grad_bytes"]), 4ull * (kAdapters / 8));
  EXPECT_EQ(j["stages"][3]["frozen_bytes"], 2 * ((kBase + 7) / 8));

  // QLoRA: a layer's flat parameter holds its codes (a byte for two) and its 16-bit norms; the
  // quantization state is never gathered. The 4,096 x 11,008 weight in 16 bits beside.
  const nlohmann::json q = plan_json(run + " --quantize nf4");
  const nlohmann::json& qpeak = q["stages"][3]["peak"];
  const std::uint64_t codes = 4ull * 4096 * 4096 / 2 + 3ull * 4096 * 11008 / 2;
  EXPECT_EQ(u64(qpeak["gathered_param_bytes"]),
            2 * root + 2 * (codes + 2 * 2 * 4096) + 2 * 2 * adapter);
  EXPECT_EQ(u64(qpeak["dequantized_weight_bytes"]), 2ull * 4096 * 11008);
}

TEST(PlanLora, PeftsAdapterConfigPlansTheRunItsFlagsDo) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/adapter_config.json";
  std::ofstream(path) << R"({"peft_type": "LORA", "r": 16, "lora_alpha": 32, "lora_dropout": 0.05,
    "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"], "bias": "none",
    "modules_to_save": null, "task_type": "CAUSAL_LM"})";
  const nlohmann::json a = plan_json("--model llama-2-7b --gpus 2 --adapter-config '" + path + "'");
  const nlohmann::json b = plan_json(
      "--model llama-2-7b --gpus 2 --lora-rank 16 --lora-alpha 32 --lora-dropout 0.05 "
      "--lora-targets q_proj,k_proj,v_proj,o_proj");
  EXPECT_EQ(a["lora"]["adapter_params"], 32ull * 16 * 4 * (4096 + 4096));
  EXPECT_EQ(a["lora"]["dropout"], 0.05);
  EXPECT_EQ(a["activation_bytes"], b["activation_bytes"]);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(a["stages"][s]["model_state_bytes"], b["stages"][s]["model_state_bytes"]) << s;
    EXPECT_EQ(a["stages"][s]["total_bytes"], b["stages"][s]["total_bytes"]) << s;
  }
  // Dropout keeps a mask and a copy: more activations than without.
  const nlohmann::json c = plan_json(
      "--model llama-2-7b --gpus 2 --lora-rank 16 --lora-targets q_proj,k_proj,v_proj,o_proj");
  EXPECT_GT(u64(b["activation_bytes"]), u64(c["activation_bytes"]));
  // modules_to_save trains a copy of the head beside the adapters.
  const nlohmann::json d =
      plan_json("--model llama-2-7b --gpus 2 --lora-rank 8 --modules-to-save lm_head");
  EXPECT_EQ(d["lora"]["saved_module_params"], 32000ull * 4096);
  EXPECT_EQ(d["inputs"]["params"], kAdapters + 32000ull * 4096);
}

TEST(PlanLora, WhatDoesNotApplyIsOneLineNamingTheFlag) {
  const std::string m = "plan --model llama-2-7b --gpus 8 ";
  expect_refused("plan --params 7B --lora-rank 8", "--lora-rank: needs --model");
  expect_refused(m + "--lora-targets q_proj", "--lora-targets: needs --lora-rank");
  expect_refused(m + "--quantize nf4", "--quantize: a quantized base trains adapters only");
  expect_refused(m + "--lora-rank 8 --quantize int4", "--quantize: expected nf4");
  expect_refused(m + "--lora-rank 8 --double-quant off", "--double-quant: needs --quantize nf4");
  expect_refused(m + "--lora-rank 8 --quantize nf4 --double-quant 1",
                 "--double-quant: expected on or off");
  expect_refused(m + "--lora-rank 8 --quantize nf4 --grad-accum 4",
                 "--grad-accum: the step of a QLoRA run, or of LoRA with modules_to_save, is not "
                 "predicted yet");
  expect_refused(m + "--lora-rank 0", "--lora-rank");
  expect_refused(m + "--lora-rank 8 --lora-dropout 1", "--lora-dropout: expected a probability");
  expect_refused(m + "--lora-rank 8 --lora-targets wq", "--lora-targets");
  // DeepSeek-V2-Lite's first layer is dense, the others mixtures.
  expect_refused(
      "plan --model deepseek-v2-lite --gpus 8 --framework fsdp --lora-rank 8 "
      "--lora-targets q_proj --quantize nf4",
      "--framework fsdp: a QLoRA base on dense and mixture layers");
  expect_refused(m + "--lora-rank 8 --zeropp hpz", "--zeropp");
  expect_refused(m + "--lora-rank 8 --stage 3 --offload-params cpu", "--offload-params");
  expect_refused(m + "--lora-rank 8 --adapter-config x.json",
                 "--lora-rank: not with --adapter-config");
  expect_refused(m + "--adapter-config /dev/zero", "--adapter-config");
  expect_refused(m + "--lora-rank 8 --estimator deepspeed", "--estimator: DeepSpeed's estimators");
}

}  // namespace
}  // namespace zerodp

namespace zerodp {
namespace {

// Side by side, each way planned again: the numbers are those the plan of that way gives when
// asked directly, so the comparison never contradicts the plan it points to.
TEST(PlanLora, FullLoraAndQloraSideBySideAreThePlansTheyPointTo) {
  const std::string run =
      "--model llama-3-8b --gpu rtx-4090 --gpus 2 --seq-len 2048 "
      "--micro-batch 3 --checkpointing full";
  const nlohmann::json full = testing::plan_json(run);
  const nlohmann::json& ways = full["fine_tunes"];
  ASSERT_EQ(ways.size(), 3u) << full["fine_tunes"].dump(2);
  EXPECT_EQ(ways[0]["method"], "full");
  EXPECT_TRUE(ways[0]["change"].is_null());
  EXPECT_EQ(ways[1]["method"], "lora");
  EXPECT_EQ(ways[2]["method"], "qlora");
  EXPECT_EQ(ways[2]["change"], "--lora-rank 16 --lora-targets all-linear --quantize nf4");
  const nlohmann::json lora = testing::plan_json(run + " --lora-rank 16 --lora-targets all-linear");
  const nlohmann::json qlora =
      testing::plan_json(run + " --lora-rank 16 --lora-targets all-linear --quantize nf4");
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(ways[0]["stages"][s]["total_bytes"], full["stages"][s]["total_bytes"]) << s;
    EXPECT_EQ(ways[1]["stages"][s]["total_bytes"], lora["stages"][s]["total_bytes"]) << s;
    EXPECT_EQ(ways[1]["stages"][s]["verdict"], lora["stages"][s]["verdict"]) << s;
    EXPECT_EQ(ways[1]["stages"][s]["min_gpus"], lora["stages"][s]["min_gpus"]) << s;
    EXPECT_EQ(ways[2]["stages"][s]["total_bytes"], qlora["stages"][s]["total_bytes"]) << s;
  }
  EXPECT_EQ(ways[1]["trained_params"], lora["inputs"]["params"]);
  // Asked as QLoRA, the other two are the full fine-tune and the same adapters in 16 bits.
  const nlohmann::json& back = qlora["fine_tunes"];
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0]["method"], "qlora");
  EXPECT_EQ(back[1]["method"], "full");
  EXPECT_EQ(back[2]["method"], "lora");
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(back[1]["stages"][s]["total_bytes"], full["stages"][s]["total_bytes"]) << s;
    EXPECT_EQ(back[2]["stages"][s]["total_bytes"], lora["stages"][s]["total_bytes"]) << s;
  }
  // Nothing fits as asked, so the answer names the first way that does: LoRA does not fit two
  // cards here, QLoRA does (DP).
  ASSERT_TRUE(full["cheapest_fitting_stage"].is_null());
  EXPECT_TRUE(ways[1]["cheapest_fitting_stage"].is_null());
  EXPECT_EQ(ways[2]["cheapest_fitting_stage"], 0);
  std::string answer;
  for (const auto& line : full["answer"]["lines"]) {
    std::string text = line.get<std::string>();
    text.erase(0, text.find_first_not_of(' '));
    answer += (answer.empty() ? "" : " ") + text;
  }
  EXPECT_NE(answer.find("As QLoRA it fits: --lora-rank 16 --lora-targets all-linear --quantize "
                        "nf4 (DP at N = 2"),
            std::string::npos)
      << answer;
  // The ways no LoRA run is planned with offer none; FSDP's row offers them, planned as FSDP.
  EXPECT_TRUE(testing::plan_json(run + " --zeropp hpz --gpus-per-node 2")["fine_tunes"].empty());
  const nlohmann::json fsdp = testing::plan_json(run + " --framework fsdp");
  ASSERT_EQ(fsdp["fine_tunes"].size(), 3u);
  const nlohmann::json fsdp_qlora = testing::plan_json(
      run + " --framework fsdp --lora-rank 16 --lora-targets all-linear --quantize nf4");
  EXPECT_EQ(fsdp["fine_tunes"][2]["stages"][3]["total_bytes"],
            fsdp_qlora["stages"][3]["total_bytes"]);
}

}  // namespace
}  // namespace zerodp
