// `zerodp plan` and `zerodp plot` as a user runs them: the real executable, its table, its
// JSON contract, its exit codes and its one-line errors.
// The plan is read at its whole width (--wide), each sentence on its line: where the lines of
// the default output wrap is plan_width_test.cc's.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/cli_testing.h"
#include "zerodp/common/units.h"

namespace {

using Result = zerodp::testing::CliResult;
using zerodp::testing::has;
using zerodp::testing::plan_json;
using zerodp::testing::slurp;
using zerodp::testing::u64;
using zerodp::testing::zerodp;

TEST(PlanCli, Example1TableShowsTheSeedFigures) {
  const Result r = zerodp("plan --wide --params 1e9 --gpus 8");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* text : {"DP         16.00 GB", "ZeRO-1      5.50 GB", "ZeRO-2      3.75 GB",
                           "ZeRO-3      2.00 GB", "comm seed", "comm ring", "one direction",
                           "3.00x DP's bytes by the seed's count and 1.50x on a ring"}) {
    EXPECT_TRUE(has(r.out, text)) << text << "\n" << r.out;
  }
}

TEST(PlanCli, JsonContract) {
  const auto j = plan_json("--params 1e9 --gpus 8");
  ASSERT_TRUE(j["stages"].is_array());
  ASSERT_EQ(j["stages"].size(), 4u);
  const std::uint64_t state[] = {16'000'000'000, 5'500'000'000, 3'750'000'000, 2'000'000'000};
  const std::uint64_t floors[] = {16'000'000'000, 4'000'000'000, 2'000'000'000, 0};
  for (int s = 0; s < 4; ++s) {
    const auto& st = j["stages"][s];
    EXPECT_EQ(st["stage"].get<int>(), s);
    EXPECT_EQ(st["model_state_bytes"].get<std::uint64_t>(), state[s]);
    EXPECT_EQ(st["total_bytes"].get<std::uint64_t>(), state[s]);
    EXPECT_EQ(st["floor_bytes"].get<std::uint64_t>(), floors[s]);
    EXPECT_TRUE(st["fits"].is_null());      // no budget given
    EXPECT_TRUE(st["min_gpus"].is_null());  // no budget given
    EXPECT_TRUE(st["max_params"].is_null());
    EXPECT_TRUE(st["comm_bytes_per_gpu"]["seed"].is_number_unsigned());
    EXPECT_TRUE(st["comm_bytes_per_gpu"]["ring"].is_number_unsigned());
    EXPECT_TRUE(st["comm_seconds"].is_null());
    EXPECT_TRUE(st["exposed_seconds"].is_null());
    EXPECT_TRUE(st["efficiency"].is_null());
  }
  EXPECT_EQ(j["stages"][0]["comm_bytes_per_gpu"]["seed"].get<std::uint64_t>(), 1'750'000'000u);
  EXPECT_EQ(j["stages"][0]["comm_bytes_per_gpu"]["ring"].get<std::uint64_t>(), 3'500'000'000u);
  EXPECT_EQ(j["stages"][3]["comm_bytes_per_gpu"]["ring"].get<std::uint64_t>(), 5'250'000'000u);
  EXPECT_TRUE(j["cheapest_fitting_stage"].is_null());
  EXPECT_EQ(j["bytes_per_param"]["total"].get<int>(), 16);
}

TEST(PlanCli, Example4ActivationsDominate) {
  const auto j = plan_json("--params 50M --gpus 8 --activations 12GB");
  EXPECT_EQ(j["stages"][0]["total_bytes"].get<std::uint64_t>(), 12'800'000'000u);
  EXPECT_EQ(j["stages"][3]["total_bytes"].get<std::uint64_t>(), 12'100'000'000u);
  EXPECT_NEAR(j["stages"][3]["savings_vs_dp"].get<double>(), 0.055, 0.0005);
  EXPECT_TRUE(j["activations_dominate"].get<bool>());
  const Result r = zerodp("plan --wide --params 50M --gpus 8 --activations 12GB");
  EXPECT_TRUE(has(r.out, "12.80 GB")) << r.out;
  EXPECT_TRUE(has(r.out, "12.10 GB"));
  EXPECT_TRUE(has(r.out, "saves only 5.5 %"));
  EXPECT_TRUE(has(r.out, "activation checkpointing or gradient accumulation"));
}

TEST(PlanCli, Example5LeastNIsFortySeven) {
  const auto j = plan_json("--params 175B --gpu-memory 80GB --activations 20GB");
  EXPECT_EQ(j["budget_bytes"].get<std::uint64_t>(), 60'000'000'000u);
  EXPECT_TRUE(j["stages"][0]["min_gpus"].is_null());
  EXPECT_TRUE(j["stages"][1]["min_gpus"].is_null());
  EXPECT_TRUE(j["stages"][2]["min_gpus"].is_null());
  EXPECT_EQ(j["stages"][3]["min_gpus"].get<std::uint64_t>(), 47u);
  EXPECT_EQ(plan_json("--params 175B --gpu-memory 80GB --activations 20GB --round-to 8")
                ["stages"][3]["min_gpus"]
                    .get<std::uint64_t>(),
            48u);
  const auto at47 = plan_json("--params 175B --gpus 47 --gpu-memory 80GB --activations 20GB");
  EXPECT_TRUE(at47["stages"][3]["fits"].get<bool>());
  EXPECT_EQ(at47["cheapest_fitting_stage"].get<int>(), 3);
  const auto at46 = plan_json("--params 175B --gpus 46 --gpu-memory 80GB --activations 20GB");
  EXPECT_FALSE(at46["stages"][3]["fits"].get<bool>());
  EXPECT_TRUE(at46["cheapest_fitting_stage"].is_null());
  const Result r =
      zerodp("plan --wide --params 175B --gpus 47 --gpu-memory 80GB --activations 20GB");
  EXPECT_TRUE(has(r.out, "59.57 GB")) << r.out;
  EXPECT_TRUE(has(r.out, "Cheapest stage that fits at N = 47: ZeRO-3"));
}

TEST(PlanCli, Example6CommunicationInBothConventions) {
  const auto j = plan_json("--params 175B --gpus 64");
  EXPECT_NEAR(j["stages"][0]["comm_bytes_per_gpu"]["seed"].get<double>() / 1e12, 0.34, 0.005);
  EXPECT_NEAR(j["stages"][3]["comm_bytes_per_gpu"]["seed"].get<double>() / 1e12, 1.03, 0.005);
  EXPECT_DOUBLE_EQ(j["comm_ratio_zero3_to_dp"]["seed"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["comm_ratio_zero3_to_dp"]["ring"].get<double>(), 1.5);
  const auto both = plan_json("--params 175B --gpus 64 --count-both-directions");
  // The seed's figures to half a unit of their last digit; 2.06, its truncation of 2.0672, to one.
  EXPECT_NEAR(both["stages"][3]["comm_bytes_per_gpu"]["seed"].get<double>() / 1e12, 2.06, 0.01);
  const Result r = zerodp("plan --wide --params 175B --gpus 64");
  EXPECT_TRUE(has(r.out, "0.34 TB")) << r.out;
  EXPECT_TRUE(has(r.out, "1.03 TB"));
}

TEST(PlanCli, Example7Efficiency) {
  const std::string given = "--comm-bytes 2.06TB --bandwidth 300GB/s --compute-time 10s";
  const auto none = plan_json(given);
  EXPECT_NEAR(none["stages"][3]["comm_seconds"].get<double>(), 6.87, 0.005);
  EXPECT_NEAR(none["stages"][3]["efficiency"].get<double>(), 0.593, 0.0005);
  const auto overlapped = plan_json(given + " --overlap 0.6");
  EXPECT_NEAR(overlapped["stages"][3]["exposed_seconds"].get<double>(), 2.75, 0.005);
  EXPECT_NEAR(overlapped["stages"][3]["efficiency"].get<double>(), 0.784, 0.001);
  EXPECT_TRUE(overlapped["stages"][3]["model_state_bytes"].is_null());  // no Φ given
  const Result r = zerodp("plan --wide " + given + " --overlap 60%");
  EXPECT_TRUE(has(r.out, "6.87 s")) << r.out;
  EXPECT_TRUE(has(r.out, "2.75 s"));
}

TEST(PlanCli, Example8NothingFitsAtFourGpus) {
  const auto j = plan_json("--params 1e10 --gpus 4 --gpu-memory 24GB --activations 6GB");
  const std::uint64_t gb[] = {160, 70, 55, 40};
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(j["stages"][s]["model_state_bytes"].get<std::uint64_t>(), gb[s] * 1'000'000'000);
    EXPECT_FALSE(j["stages"][s]["fits"].get<bool>());
  }
  EXPECT_TRUE(j["cheapest_fitting_stage"].is_null());
  EXPECT_EQ(j["stages"][3]["min_gpus"].get<std::uint64_t>(), 9u);
  const Result r = zerodp("plan --wide --params 1e10 --gpus 4 --gpu-memory 24GB --activations 6GB");
  EXPECT_TRUE(has(r.out, "No stage fits at N = 4")) << r.out;
  EXPECT_TRUE(has(r.out, "ZeRO-3 9"));
}

TEST(PlanCli, SelfTestOneGpu) {
  const auto j = plan_json("--params 1e9 --gpus 1");
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(j["stages"][s]["model_state_bytes"].get<std::uint64_t>(), 16'000'000'000u);
  }
  EXPECT_TRUE(has(zerodp("plan --wide --params 1e9 --gpus 1").out, "saves nothing without N > 1"));
}

TEST(PlanCli, InverseAndShapeAndOptions) {
  const auto inverse = plan_json("--gpus 8 --gpu-memory 80GB");
  EXPECT_EQ(inverse["stages"][0]["max_params"].get<std::uint64_t>(), 5'000'000'000u);
  EXPECT_EQ(inverse["stages"][3]["max_params"].get<std::uint64_t>(), 40'000'000'000u);
  const auto shape = plan_json(
      "--params 1e9 --layers 2 --hidden 64 --heads 4 --seq-len 8 --micro-batch 1 "
      "--checkpointing full");
  EXPECT_EQ(shape["activation_bytes"].get<std::uint64_t>(), 2u * 2 * 8 * 64);
  EXPECT_EQ(plan_json("--params 1e9 --precision fp32")["bytes_per_param"]["total"].get<int>(), 16);
  EXPECT_EQ(plan_json("--params 1e9 --optimizer sgd")["bytes_per_param"]["optimizer"].get<int>(),
            4);
  EXPECT_EQ(
      plan_json("--params 1e9 --bytes-per-param 2,2,6")["bytes_per_param"]["total"].get<int>(), 10);
  EXPECT_TRUE(has(zerodp("plan --wide --params 1e9 --gpus 8 --binary").out, "14.90 GiB"));
}

struct BadInput {
  const char* args;
  const char* message_start;  // what stderr starts with after "zerodp: "
};

TEST(PlanCli, APublishedModelGivesItsExactCount) {
  // Llama-3-8B by name: 8,030,261,248 parameters (its published count), the largest module the
  // 128256 x 4096 embedding; without the runtime's terms the plan is --params 8030261248's.
  const auto j =
      plan_json("--model llama-3-8b --gpus 8 --buffers none --cuda-overhead 0 --activations 0B");
  EXPECT_EQ(j["model"]["params"].get<std::uint64_t>(), 8'030'261'248u);
  EXPECT_EQ(j["model"]["active_params"].get<std::uint64_t>(), 8'030'261'248u);
  EXPECT_EQ(j["model"]["largest_layer_params"].get<std::uint64_t>(), 128'256u * 4096);
  EXPECT_EQ(j["model"]["source"], "meta-llama/Meta-Llama-3-8B");
  EXPECT_EQ(j["inputs"]["params"].get<std::uint64_t>(), 8'030'261'248u);
  EXPECT_EQ(j["stages"], plan_json("--params 8030261248 --gpus 8")["stages"]);
  EXPECT_TRUE(plan_json("--params 1e9 --gpus 8")["model"].is_null());

  // The same from a config.json on disk; Mixtral's active parameters in the table.
  const std::string path = ::testing::TempDir() + "/mixtral-config.json";
  std::ofstream(path) << R"({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
    "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "num_local_experts": 8, "num_experts_per_tok": 2, "rope_theta": 1e6,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
  const Result r = zerodp("plan --wide --model-config " + path + " --gpus 8 --activations 0B");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "46,702,792,704 parameters, 12,879,925,248 active per token")) << r.out;

  // Its activations from --seq-len and --micro-batch: at s = T = 2048, b = 1 with full
  // checkpointing and flash attention (h 4096, q 4096, k 1024, I 14336, V 128256): 32 layer
  // inputs (2Th each), one layer recomputed (two norms of 6Th + 4T, the projections' input
  // 2Th, flash's q, k, v and fp32 log-sum-exp, o_proj's input 2Tq, the MLP 2Th + 8TI) and the
  // rotary tables (2 x 2sd): 949,239,808 B. Outside: the ids 8T, the final norm, the head's
  // input, the fp32 log-softmax 4TV, the labels 8(s + 1) and 4, then the loss's two fp32
  // gradients 8TV: 3,219,169,292 B. The vocabulary outweighs every layer.
  const std::uint64_t T = 2048, h = 4096, V = 128'256;
  const std::uint64_t layer = 2 * (6 * T * h + 4 * T) + 2 * T * h +
                              (2 * T * (4096 + 1024 + 1024) + 4 * 32 * T) + 2 * T * 4096 +
                              (2 * T * h + 8 * T * 14336);
  const std::uint64_t layers = 32 * 2 * T * h + layer + 2 * 2 * T * 128;
  const std::uint64_t outside =
      8 * T + (6 * T * h + 4 * T) + 2 * T * h + 4 * T * V + 8 * (T + 1) + 4 + 8 * T * V;
  ASSERT_EQ(layers, 949'239'808u);
  ASSERT_EQ(outside, 3'219'169'292u);
  const auto act = plan_json(
      "--model llama-3-8b --gpus 8 --seq-len 2048 --micro-batch 1 --checkpointing full "
      "--attention flash");
  EXPECT_EQ(act["activation_bytes"].get<std::uint64_t>(), layers + outside);
  EXPECT_TRUE(has(act["activations_source"].get<std::string>(), "flash attention"));

  // Every catalogue model is listed with its count.
  const Result list = zerodp("plan --wide --list-models");
  EXPECT_EQ(list.status, 0);
  for (const char* name : {"gpt2-xl", "pythia-12b", "llama-2-70b", "mistral-7b", "qwen2.5-7b"}) {
    EXPECT_TRUE(has(list.out, name)) << name;
  }
}

TEST(PlanCli, DeepSpeedsEstimateBesideThePlan) {
  // memory.rst's model (2851e6 params, 32e6 in its largest layer) on one node of 8 GPUs:
  // DeepSpeed v0.16.4's text, then zerodp's figures and the differences.
  const Result r = zerodp(
      "plan --wide --params 2851e6 --largest-layer 32e6 --gpus-per-node 8 --estimator deepspeed");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "HW: Setup with 1 node, 8 GPUs per node.\n"
                  "SW: Model with 2851M total params, 32M largest layer params.\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "  127.45GB |  11.28GB | offload_optimizer=none\n")) << r.out;
  EXPECT_TRUE(has(r.out,
                  "    1.43GB |   6.09GB | offload_param=none, offload_optimizer=none, "
                  "zero_init=1\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "ZeRO-2 10.7 GB, ZeRO-3 5.70 GB of model state per GPU")) << r.out;

  // JSON: the rows in bytes, six for ZeRO-3; with a model, its largest layer.
  const auto j = plan_json(
      "--model llama-3-8b --gpus-per-node 8 --nodes 2 --estimator deepspeed --activations 0B");
  ASSERT_EQ(j["deepspeed"]["zero2"].size(), 2u);
  ASSERT_EQ(j["deepspeed"]["zero3"].size(), 6u);
  EXPECT_EQ(j["inputs"]["gpus"].get<int>(), 16);
  EXPECT_EQ(j["deepspeed"]["largest_layer_params"].get<std::uint64_t>(), 128'256u * 4096);
  // ZeRO-3, nothing offloaded: 4 x the largest layer + int(18 params / 16) per GPU.
  const auto& last = j["deepspeed"]["zero3"][5];
  EXPECT_EQ(last["offload_params"], "none");
  EXPECT_EQ(last["offload_optimizer"], "none");
  EXPECT_EQ(last["zero_init"], false);
  EXPECT_EQ(last["gpu_bytes"].get<std::uint64_t>(), 4u * 128'256 * 4096 + 18u * 8'030'261'248 / 16);
  EXPECT_FALSE(plan_json("--params 1e9 --gpus 8").contains("deepspeed"));
}

TEST(PlanCli, OffloadTakesTheOptimizerOffTheGpu) {
  // Llama-3-8B on 8 GPUs of 40 GB, the optimizer on the CPU: ZeRO-2 keeps 2 x 8.03e9 (the
  // 16-bit params) on the GPU, its gradient shard accumulating on the host; the host keeps 16
  // bytes for each of the rank's 1,003,782,656 params, 8 GPUs a node.
  const auto j = plan_json(
      "--model llama-3-8b --gpus 8 --gpu-memory 40GB --offload-optimizer cpu --gpus-per-node 8 "
      "--activations 0B");
  const std::uint64_t phi = 8'030'261'248, shard = 1'003'782'656;
  const auto& z2 = j["stages"][2];
  EXPECT_EQ(z2["model_state_bytes"].get<std::uint64_t>(), 2 * phi);
  EXPECT_EQ(z2["offload"]["host_bytes_per_gpu"].get<std::uint64_t>(), 16 * shard);
  EXPECT_EQ(z2["offload"]["host_bytes_per_node"].get<std::uint64_t>(), 8 * 16 * shard);
  EXPECT_EQ(z2["offload"]["pcie_to_host_bytes_per_step"].get<std::uint64_t>(), 2 * shard);
  EXPECT_TRUE(j["stages"][0]["offload"].is_null());  // DP keeps everything
  EXPECT_EQ(j["inputs"]["offload_optimizer"], "cpu");
  EXPECT_TRUE(plan_json("--params 1e9 --gpus 8")["stages"][2]["offload"].is_null());
  const Result r = zerodp(
      "plan --wide --model llama-3-8b --gpus 8 --gpu-memory 40GB --offload-optimizer cpu "
      "--activations "
      "0B");
  EXPECT_TRUE(has(r.out, "offload: optimizer states to cpu")) << r.out;
  EXPECT_TRUE(has(r.out, "PCIe to host/step")) << r.out;
}

TEST(PlanCli, ADeepSpeedConfigSetsStageOffloadPrecisionAndMicroBatch) {
  // ZeRO-2 with the optimizer on the CPU, bf16, micro-batch 2: the plan is the one the same
  // flags give, its header names the config, a note says whether its stage fits, and an
  // unknown key is one warning.
  const std::string path = ::testing::TempDir() + "/ds.json";
  std::ofstream(path) << R"({"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 2,
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                          "reduce_bucket_size": 5e8}, "colour": "blue"})";
  const std::string model = "--model llama-3-8b --gpus 8 --gpu-memory 40GB --seq-len 512 ";
  const Result r = zerodp("plan --wide " + model + "--deepspeed-config " + path);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "ZeRO-2, optimizer states to cpu, params to none, mixed bf16, "
                  "micro-batch 2\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "The DeepSpeed config's stage, ZeRO-2, fits at N = 8")) << r.out;
  EXPECT_TRUE(has(r.err, "warning: " + path + ": keys this reader does not know, ignored: colour"))
      << r.err;
  const auto with_config = plan_json(model + "--deepspeed-config " + path);
  const auto with_flags =
      plan_json(model + "--micro-batch 2 --precision bf16 --offload-optimizer cpu");
  EXPECT_EQ(with_config["stages"], with_flags["stages"]);
  EXPECT_EQ(with_config["activation_bytes"], with_flags["activation_bytes"]);
  EXPECT_EQ(with_config["inputs"]["configured_stage"].get<int>(), 2);
  // A flag that says otherwise is an error naming both.
  const Result clash =
      zerodp("plan --wide " + model + "--deepspeed-config " + path + " --precision fp16");
  EXPECT_EQ(clash.status, 2);
  EXPECT_TRUE(has(clash.err, "--precision: 'fp16' contradicts")) << clash.err;
}

TEST(PlanCli, AFlagAgreesWithTheConfigByWhatItNamesNotItsSpelling) {
  // "AdamW" in the config is Adam's bytes; --optimizer adamw and adam both agree with it, sgd
  // does not, and the error quotes the flag as typed.
  const std::string path = ::testing::TempDir() + "/ds_adamw.json";
  std::ofstream(path) << R"({"optimizer": {"type": "AdamW"}, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 2}})";
  const std::string plan =
      "--model gpt2 --gpus 8 --activations 0B --deepspeed-config " + path + " ";
  const auto from_config = plan_json(plan);
  for (const char* word : {"adamw", "adam"}) {
    EXPECT_EQ(plan_json(plan + "--optimizer " + word + " --precision bf16")["stages"],
              from_config["stages"])
        << word;
  }
  const Result clash = zerodp("plan --wide " + plan + "--optimizer sgd");
  EXPECT_EQ(clash.status, 2);
  EXPECT_TRUE(has(clash.err, "--optimizer: 'sgd' contradicts " + path + "'s optimizer.type (adam)"))
      << clash.err;
}

TEST(PlanCli, BadInputGetsOneLineNamingTheFlagAndExitTwo) {
  const BadInput cases[] = {
      {"plan", "--params: required"},
      {"plan --wide --gpus 8", "--params: required"},
      {"plan --wide --params 0", "--params: expected a count"},
      {"plan --wide --params -5", "--params: expected a count"},
      {"plan --wide --params=-5", "--params: expected a count"},
      {"plan --wide --params nan", "--params: expected a count"},
      {"plan --wide --params inf", "--params: expected a count"},
      {"plan --wide --params abc", "--params: expected a count"},
      {"plan --wide --params 5Q", "--params: expected a count"},
      {"plan --wide --params 1e9 --gpus 4.5", "--gpus: expected a whole number"},
      {"plan --wide --params 1e9 --gpus 0", "--gpus: expected a whole number"},
      {"plan --wide --params 1e9 --gpus -8", "--gpus: expected a whole number"},
      {"plan --wide --params 1e9 --gpu-memory 80XB", "--gpu-memory: expected a size"},
      {"plan --wide --params 1e9 --gpu-memory 80", "--gpu-memory: expected a size"},
      {"plan --wide --params 1e9 --gpus 8 --compute-time 10s --bandwidth 300GB/s --overlap 1.5",
       "--overlap: expected a fraction"},
      {"plan --wide --params 1e9 --gpus 8 --compute-time 10s --bandwidth 300GB/s --overlap -0.1",
       "--overlap: expected a fraction"},
      {"plan --wide --params 1e9 --gpus 8 --compute-time nan --bandwidth 300GB/s",
       "--compute-time: expected a duration"},
      {"plan --wide --params 1e9 --gpus 8 --compute-time 10s --bandwidth inf",
       "--bandwidth: expected a bandwidth"},
      {"plan --wide --params 2e18", "--params: expected a count whose bytes fit in 64 bits"},
      {"plan --wide --params 1e9 --gpus 8 --compute-time 10s", "--bandwidth: required"},
      {"plan --wide --params 1e9 --round-to 8", "--round-to: needs --gpu-memory"},
      {"plan --wide --params 1e9 --precision fp8", "--precision: expected fp16, bf16 or fp32"},
      {"plan --wide --params 1e9 --bytes-per-param 2,2", "--bytes-per-param: expected P,G,K"},
      {"plan --wide --params 1e9 --layers 2 --hidden 64", "--heads: required"},
      {"plan --wide --params 1e9 --comm-convention both --compute-time 1s --bandwidth 1GB/s --gpus "
       "2",
       "--comm-convention: expected seed or ring"},
      {"plan --wide --model gpt5", "--model: unknown model 'gpt5'; known: gpt2, gpt2-medium"},
      {"plan --wide --model llama3-8b",
       "--model: unknown model 'llama3-8b'; did you mean 'llama-3-8b'?"},
      {"plan --wide --model gpt2 --params 1B", "--params: not with --model, which gives the count"},
      {"plan --wide --model gpt2 --model-config c.json", "--model: not with --model-config"},
      {"plan --wide --model-config /nonexistent/config.json", "--model-config: cannot read"},
      {"plan --wide --model llama-3-8b --layers 32", "--layers: not with --model"},
      {"plan --wide --model gpt2 --seq-len 8 --micro-batch 1 --attention paged",
       "--attention: expected sdpa (the default), flash or eager"},
      {"plan --wide --model gpt2 --activations 1GB --checkpointing full",
       "--activations: not with --checkpointing"},
      {"plan --wide --params 1e9 --attention flash", "--attention: applies to --model"},
      {"plan --wide --model gpt2 --seq-len 8 --micro-batch 1 --activations 1GB",
       "--activations: not with --seq-len"},
      {"plan --wide --model gpt2 --seq-len 4kk",
       "--seq-len: expected a whole number of tokens such "
       "as 4096 or 4k (k = 1024), got '4kk'"},
      {"plan --wide --model gpt2 --seq-len 4.5k", "--seq-len: expected a whole number of tokens"},
      {"plan --wide --params 1e9 --layers 2 --hidden 64 --heads 4 --micro-batch 1 --seq-len 1e3k",
       "--seq-len: expected a whole number of tokens"},
      {"plan --wide --params 1B --estimator ds", "--estimator: expected deepspeed"},
      {"plan --wide --params 1B --estimator deepspeed", "--largest-layer: required"},
      {"plan --wide --params 1B --nodes 2", "--nodes: needs --gpus-per-node"},
      {"plan --wide --params 1B --largest-layer 2B --estimator deepspeed",
       "--largest-layer: expected at most --params"},
      {"plan --wide --params 1B --largest-layer 1M --estimator deepspeed --gpus 4 --gpus-per-node "
       "8",
       "--gpus-per-node: expected at most --gpus (4)"},
      {"plan --wide --params 1B --largest-layer 1M --estimator deepspeed --gpus 4 --gpus-per-node "
       "2",
       "--gpus: 4 is not --gpus-per-node x --nodes (2)"},
      {"plan --wide --params 1B --gpus 8 --gpus-per-node 4 --nodes 4",
       "--gpus: 8 is not --gpus-per-node x --nodes (16)"},
      {"plan --wide --params 1B --gpus 8 --intra-bandwidth 300GB/s",
       "--gpus-per-node: required with --intra-bandwidth"},
      {"plan --wide --params 1B --gpus 12 --gpus-per-node 8 --zeropp qwz",
       "--gpus-per-node: expected a divisor of --gpus (12)"},
      {"plan --wide --params 1B --gpus-per-node 8 --nodes 2 --zeropp qwz,lora",
       "--zeropp: expected none or a list of qwz, hpz, qgz"},
      {"plan --wide --params 1B --gpus-per-node 8 --nodes 1 --intra-bandwidth 300GB/s "
       "--inter-bandwidth 50GB/s",
       "--inter-bandwidth: one node sends nothing across nodes"},
      {"plan --wide --params 1B --gpus-per-node 8 --nodes 2 --intra-bandwidth 300GB/s",
       "--inter-bandwidth: required with --intra-bandwidth"},
      {"plan --wide --params 1B --gpus-per-node 8 --nodes 2 --intra-bandwidth 300GB/s "
       "--inter-bandwidth 50GB/s --bandwidth 1GB/s --compute-time 1s",
       "--bandwidth: not with --intra-bandwidth"},
      {"plan --wide --params 1B --gpus-per-node 8 --nodes 2 --intra-bandwidth 300GB/s "
       "--inter-bandwidth 0GB/s",
       "--inter-bandwidth: expected a bandwidth"},
      {"plan --wide --params 1B --gpus-per-node 1 --nodes 8 --zeropp hpz",
       "--zeropp: hpz needs nodes of more than one GPU"},
      {"plan --wide --params 1B --gpus 8 --buffers megatron",
       "--buffers: expected deepspeed or none"},
      {"plan --wide --params 1B --gpus 8 --buffers deepspeed",
       "--largest-layer: required with --params and --buffers deepspeed"},
      {"plan --wide --params 1B --gpus 8 --deepspeed-config /dev/null",
       "--deepspeed-config: cannot read '/dev/null' (is a device, not a file"},
      {"plan --wide --params 1B --gpus 8 --cuda-overhead 2XB", "--cuda-overhead: expected a size"},
      {"plan --wide --estimator deepspeed --gpus-per-node 8",
       "--params: required with --estimator"},
      {"plan --wide --params 1B --gpus 8 --offload-optimizer gpu",
       "--offload-optimizer: expected none"},
      {"plan --wide --params 1B --gpus 8 --offload-params disk", "--offload-params: expected none"},
      {"plan --wide --params 1B --gpus 8 --offload-optimizer cpu --gpus-per-node 16",
       "--gpus-per-node: expected at most --gpus (8)"},
      {"plan --wide --params 1B --deepspeed-config /nonexistent/ds.json",
       "--deepspeed-config: cannot read"},
      {"plot --max-gpus 64 --out x.svg", "--params: required"},
      {"plot --params 1e9", "--out: required"},
      {"plot --params 1e9 --max-gpus 1 --out x.svg", "--max-gpus: expected a whole number"},
      {"plot --params 1e9 --max-gpus 8.5 --out x.svg", "--max-gpus: expected a whole number"},
      {"plot --params 1e9 --log-x --linear-x --out x.svg", "--linear-x: not with --log-x"},
      // The memory figure reads the count and the bytes per parameter; a plan input it would
      // ignore is refused, and --breakdown takes those but not the figure's axis.
      {"plot --params 1e9 --gpus 8 --out x.svg",
       "--gpus: a plan input, which the memory figure does not read; add --breakdown"},
      {"plot --breakdown --params 1e9 --gpus 8 --max-gpus 16 --out x.svg",
       "--max-gpus: the memory figure's (N along the axis); not with --breakdown"},
      {"plot --breakdown --params 1e9 --out x.svg", "--gpus: required with --breakdown"},
      {"plot --breakdown --params 1e9 --gpus 8 --json --out x.svg",
       "--json: plot writes an SVG; ask zerodp plan for it"},
      {"plot --breakdown --params 1e9 --gpus 0 --out x.svg", "--gpus: expected"},
  };
  for (const BadInput& c : cases) {
    const Result r = zerodp(c.args);
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_EQ(r.err.rfind(std::string("zerodp: ") + c.message_start, 0), 0u)
        << c.args << "\n  got: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
  }
}

TEST(PlanCli, ASequenceLengthInKIsTokensInPowersOfTwo) {
  // A model card's "4k" is 4096 tokens: the same plan, every figure and word of it.
  const std::string run =
      "plan --wide --model llama-3-8b --gpus 8 --gpu a100-40gb --json --seq-len ";
  const Result k = zerodp(run + "4k");
  const Result digits = zerodp(run + "4096");
  ASSERT_EQ(k.status, 0) << k.err;
  ASSERT_EQ(digits.status, 0) << digits.err;
  EXPECT_EQ(k.out, digits.out);
  EXPECT_EQ(zerodp(run + "32K").out, zerodp(run + "32768").out);
  const std::string shape =
      "plan --wide --params 1e9 --layers 2 --hidden 64 --heads 4 --micro-batch 1 ";
  EXPECT_EQ(zerodp(shape + "--seq-len 2k").out, zerodp(shape + "--seq-len 2048").out);
}

TEST(PlotCli, WritesTheFigure) {
  const std::string path =
      testing::TempDir() + "/plan_cli_memory_" + std::to_string(getpid()) + ".svg";
  std::remove(path.c_str());
  const Result r = zerodp("plot --params 1e9 --max-gpus 64 --out '" + path + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "wrote ")) << r.out;
  const std::string svg = slurp(path);
  EXPECT_TRUE(has(svg, "<svg")) << svg.substr(0, 200);
  EXPECT_TRUE(has(svg, "</svg>"));
  EXPECT_GT(std::count(svg.begin(), svg.end(), '\n'), 20);
  const Result linear = zerodp("plot --params 175B --max-gpus 100 --linear-x --out '" + path + "'");
  ASSERT_EQ(linear.status, 0) << linear.err;
  EXPECT_TRUE(has(slurp(path), "linear scale"));
  std::remove(path.c_str());
}

TEST(PlotCli, TheBreakdownShowsEachStagesPeakAsThePlanCountsItAgainstTheGpu) {
  const std::string path =
      testing::TempDir() + "/plan_cli_breakdown_" + std::to_string(getpid()) + ".svg";
  std::remove(path.c_str());
  const std::string run =
      "--model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 4096 --micro-batch 1 "
      "--checkpointing full --attention flash";
  const Result r = zerodp("plot --breakdown " + run + " --out '" + path + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string svg = slurp(path);
  // The bars' totals are the plan's peaks (42.5 GB for ZeRO-2, 29.6 GB for ZeRO-3), the line
  // is the card's 42.3 GB, and the notes' terms are the legend's.
  const nlohmann::json plan = nlohmann::json::parse(zerodp("plan --wide " + run + " --json").out);
  // A tight bar says so beside its number (ZeRO-2's 42.5 GB of 42.3 GB: within the planner's
  // measured 9 % of over-prediction).
  for (const auto& stage : plan["stages"]) {
    const std::string total =
        zerodp::units::format_bytes(stage["total_bytes"].get<std::uint64_t>()) +
        (stage["verdict"] == "tight" ? " (tight)" : "");
    EXPECT_TRUE(has(svg, ">" + total + "<")) << total;
  }
  EXPECT_TRUE(has(svg, ">42.5 GB (tight)<"));
  EXPECT_TRUE(has(svg, ">GPU memory 42.3 GB<"));
  for (const char* term :
       {"model state", "CUDA", "activations", "reduce buffers", "a layer's gradient"}) {
    EXPECT_TRUE(has(svg, std::string(">") + term + "<")) << term;
  }
  std::remove(path.c_str());
}

TEST(PlotCli, AnUnwritablePathIsRefusedNamingTheFlagBeforeTheFigureIsDrawn) {
  const Result r = zerodp("plot --params 1e9 --out /nonexistent-dir/memory.svg");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.err.rfind("zerodp: --out: '/nonexistent-dir/memory.svg' is in no folder that exists", 0),
      0u)
      << r.err;
}

}  // namespace
