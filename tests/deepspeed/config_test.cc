// Reading a DeepSpeed config (deepspeed::parse_deepspeed_config): what it sets, what it leaves to
// the flags, what it lists, and its one-line errors.
#include <gtest/gtest.h>

#include "zerodp/common/error.h"
#include "zerodp/deepspeed/config.h"

namespace zerodp::deepspeed {
namespace {

TEST(DeepSpeedConfig, ATypicalFineTuningConfig) {
  // A Hugging Face Trainer config: stage 3 with everything on the CPU, bf16, "auto" sizes.
  const DeepSpeedConfig c = parse_deepspeed_config(R"({
    "bf16": {"enabled": true},
    "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}},
    "zero_optimization": {
      "stage": 3,
      "offload_optimizer": {"device": "cpu", "pin_memory": true},
      "offload_param": {"device": "nvme", "nvme_path": "/local"},
      "overlap_comm": true,
      "reduce_bucket_size": "auto",
      "stage3_prefetch_bucket_size": 5e7,
      "stage3_param_persistence_threshold": "auto",
      "zero_quantized_weights": true
    },
    "gradient_accumulation_steps": 4,
    "gradient_clipping": "auto",
    "train_micro_batch_size_per_gpu": "auto",
    "steps_per_print": 100
  })",
                                                   "ds.json");
  EXPECT_EQ(c.stage, Stage::zero3);
  EXPECT_EQ(c.offload_optimizer, OffloadDevice::cpu);
  EXPECT_EQ(c.offload_params, OffloadDevice::nvme);
  EXPECT_EQ(c.precision, plan::Precision::bf16);
  EXPECT_EQ(c.optimizer, plan::Optimizer::adam);
  EXPECT_EQ(c.grad_accum, 4u);
  EXPECT_FALSE(c.micro_batch.has_value());
  // Listed in key order; the sizes a model's hidden size fills are flagged instead (below).
  const std::vector<std::string> autos = {"train_micro_batch_size_per_gpu"};
  EXPECT_EQ(c.auto_keys, autos);
  // The sizes: given ones read, "auto" ones flagged for the model's hidden size, the rest
  // DeepSpeed's defaults; and ZeRO++'s quantized weights.
  EXPECT_TRUE(c.reduce_bucket_auto);
  EXPECT_TRUE(c.persistence_threshold_auto);
  EXPECT_FALSE(c.prefetch_bucket_auto);
  EXPECT_EQ(c.buffers.prefetch_bucket_size, 50'000'000u);
  EXPECT_EQ(c.buffers.overlap_comm, true);
  EXPECT_EQ(c.buffers.max_live_parameters, 1'000'000'000u);
  EXPECT_TRUE(c.zeropp.qwz);
  EXPECT_FALSE(c.zeropp.qgz);
  EXPECT_FALSE(c.zeropp.hpz);
  EXPECT_TRUE(c.not_in_plan.empty());
  EXPECT_TRUE(c.unknown.empty());
}

TEST(DeepSpeedConfig, NeitherHalfPrecisionMeansFp32AndUnknownKeysAreListed) {
  const DeepSpeedConfig c = parse_deepspeed_config(
      R"({"zero_optimization": {"stage": 1, "colour": 1}, "fp16": {"enabled": false},
          "optimizer": {"type": "SGD", "params": {"momentum": 0.9}}, "shape": "round"})",
      "ds.json");
  EXPECT_EQ(c.precision, plan::Precision::fp32);
  EXPECT_EQ(c.optimizer, plan::Optimizer::sgd_momentum);
  const std::vector<std::string> unknown = {"shape", "zero_optimization.colour"};
  EXPECT_EQ(c.unknown, unknown);
  // "auto" precision is left to the flags.
  EXPECT_FALSE(parse_deepspeed_config(R"({"bf16": {"enabled": "auto"}})", "d").precision);
}

TEST(DeepSpeedConfig, TheOptimizerBlockSaysWhichImplementationSteps) {
  auto impl = [](const char* text) { return parse_deepspeed_config(text, "d").optimizer_impl; };
  EXPECT_EQ(impl(R"({"optimizer": {"type": "AdamW"}})"), OptimizerImpl::fused);
  EXPECT_EQ(impl(R"({"optimizer": {"type": "Adam", "params": {"torch_adam": true}}})"),
            OptimizerImpl::foreach);
  EXPECT_EQ(impl(R"({"optimizer": {"type": "AdamW",
                     "params": {"torch_adam": true, "foreach": false}}})"),
            OptimizerImpl::single);
  EXPECT_EQ(impl(R"({"optimizer": {"type": "FusedAdam", "params": {"torch_adam": true}}})"),
            OptimizerImpl::fused);  // the flag is Adam's and AdamW's only
  const DeepSpeedConfig none = parse_deepspeed_config(R"({"train_batch_size": 8})", "d");
  EXPECT_FALSE(none.optimizer_block);
  EXPECT_FALSE(none.optimizer_impl.has_value());
  EXPECT_TRUE(parse_deepspeed_config(R"({"optimizer": {"type": "Lion"}})", "d").optimizer_block);
}

TEST(DeepSpeedConfig, ZeroPlusPlusAndBufferSizes) {
  // The ZeRO++ tutorial's config (deepspeed.ai/tutorials/zeropp), with explicit sizes.
  const DeepSpeedConfig c = parse_deepspeed_config(R"({
    "zero_optimization": {"stage": 3, "reduce_bucket_size": 10000000,
      "reduce_scatter": true, "zero_quantized_weights": true, "zero_hpz_partition_size": 16,
      "zero_quantized_gradients": true, "contiguous_gradients": false, "overlap_comm": false,
      "sub_group_size": 2e8, "stage3_max_live_parameters": 3e9,
      "stage3_param_persistence_threshold": 1e6, "allgather_bucket_size": 2e8}})",
                                                   "ds.json");
  EXPECT_TRUE(c.zeropp.qwz);
  EXPECT_TRUE(c.zeropp.qgz);
  EXPECT_EQ(c.zeropp.hpz_size, 16);
  EXPECT_EQ(c.buffers.reduce_bucket_size, 10'000'000u);
  EXPECT_FALSE(c.buffers.contiguous_gradients);
  EXPECT_EQ(c.buffers.overlap_comm, false);
  EXPECT_EQ(c.buffers.sub_group_size, 200'000'000u);
  EXPECT_EQ(c.buffers.max_live_parameters, 3'000'000'000u);
  EXPECT_EQ(c.buffers.param_persistence_threshold, 1'000'000u);
  EXPECT_EQ(c.buffers.allgather_bucket_size, 200'000'000u);
  EXPECT_EQ(c.buffers.prefetch_bucket_size, 50'000'000u);  // DeepSpeed's default
  EXPECT_TRUE(c.unknown.empty());
  EXPECT_TRUE(c.auto_keys.empty());
}

TEST(DeepSpeedConfig, ContradictionsAndBadValuesAreOneLineErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"bf16": {"enabled": true}, "fp16": {"enabled": true}})",
       "\"bf16.enabled\" and \"fp16.enabled\" are both true"},
      {R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})",
       "\"zero_optimization.offload_param\" needs stage 3"},
      {R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"}}})",
       "\"zero_optimization.offload_optimizer\" needs stage 1, 2 or 3"},
      {R"({"zero_optimization": {"stage": 4}})", "\"zero_optimization.stage\" must be 0, 1, 2"},
      {R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "disk"}}})",
       "\"zero_optimization.offload_param.device\" must be \"none\", \"cpu\" or \"nvme\""},
      {R"({"train_micro_batch_size_per_gpu": 0})",
       "\"train_micro_batch_size_per_gpu\" must be a whole number >= 1"},
      {R"({"zero_optimization": {"reduce_bucket_size": -5}})",
       "\"zero_optimization.reduce_bucket_size\" must be a whole number >= 1"},
      {R"({"zero_optimization": {"zero_hpz_partition_size": 0}})",
       "\"zero_optimization.zero_hpz_partition_size\" must be a whole number >= 1"},
      {R"({"zero_optimization": {"overlap_comm": "yes"}})",
       "\"zero_optimization.overlap_comm\" must be true, false or \"auto\""},
      {R"({"optimizer": "Adam"})", "\"optimizer\" must be an object with a \"type\""},
      {R"([])", "expected a JSON object"},
  };
  for (const auto& [text, message] : cases) {
    try {
      parse_deepspeed_config(text, "--deepspeed-config ds.json");
      ADD_FAILURE() << text << ": accepted";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--deepspeed-config ds.json: ", 0), 0u) << what;
      EXPECT_NE(what.find(message), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace zerodp::deepspeed
