// A parsed DeepSpeed config applied to the settings the other inputs gave
// (report::apply_deepspeed_config): what it fills, what it leaves, each conflict with its key
// and value, and the buffers' "auto" sizes from the model's hidden size.
#include <gtest/gtest.h>

#include <climits>

#include "zerodp/deepspeed/config.h"
#include "zerodp/report/settings.h"

namespace zerodp::report {
namespace {

deepspeed::DeepSpeedConfig config(const char* json) {
  return deepspeed::parse_deepspeed_config(json, "ds.json");
}

constexpr const char* kStage2Offload = R"({
  "bf16": {"enabled": true},
  "optimizer": {"type": "AdamW"},
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                        "reduce_bucket_size": "auto"}
})";

TEST(DeepSpeedSettings, TheConfigFillsWhatTheFlagsLeftUnset) {
  PlanInputs in;
  SharedSettings given;
  given.seq_len_given = true;
  const AppliedConfig a = apply_deepspeed_config(config(kStage2Offload), "ds.json", given, 0, in);
  EXPECT_TRUE(a.conflicts.empty());
  EXPECT_EQ(a.settings.stage, Stage::zero2);
  EXPECT_EQ(a.settings.precision, plan::Precision::bf16);
  EXPECT_EQ(a.settings.optimizer, plan::Optimizer::adam);
  EXPECT_EQ(a.settings.offload_optimizer, deepspeed::OffloadDevice::cpu);
  EXPECT_FALSE(a.settings.offload_params.has_value());  // "none" in a config sets nothing
  EXPECT_EQ(a.settings.micro_batch, 4u);
  EXPECT_FALSE(a.settings.zeropp.has_value());
  EXPECT_EQ(in.deepspeed_config, "ds.json");
  EXPECT_EQ(in.deepspeed_summary, deepspeed::deepspeed_config_summary(config(kStage2Offload)));
}

TEST(DeepSpeedSettings, TheMicroBatchComesOnlyWithASequenceLength) {
  PlanInputs in;
  const AppliedConfig a = apply_deepspeed_config(config(kStage2Offload), "ds.json", {}, 0, in);
  EXPECT_FALSE(a.settings.micro_batch.has_value());
  EXPECT_TRUE(a.conflicts.empty());
}

TEST(DeepSpeedSettings, EqualValuesAgreeAndDifferentOnesAreConflictsInOrder) {
  PlanInputs in;
  SharedSettings given;
  given.precision = plan::Precision::bf16;                   // agrees
  given.optimizer = plan::Optimizer::sgd;                    // AdamW in the config
  given.offload_optimizer = deepspeed::OffloadDevice::none;  // "none" typed is a value
  given.micro_batch = 4;                                     // agrees
  given.seq_len_given = true;
  given.stage = Stage::zero3;
  const AppliedConfig a = apply_deepspeed_config(config(kStage2Offload), "ds.json", given, 0, in);
  ASSERT_EQ(a.conflicts.size(), 3u);
  EXPECT_EQ(a.conflicts[0].field, "optimizer");
  EXPECT_EQ(a.conflicts[0].key, "optimizer.type");
  EXPECT_EQ(a.conflicts[0].value, "adam");
  EXPECT_EQ(a.conflicts[1].field, "offload_optimizer");
  EXPECT_EQ(a.conflicts[1].key, "zero_optimization.offload_optimizer.device");
  EXPECT_EQ(a.conflicts[1].value, "cpu");
  EXPECT_EQ(a.conflicts[2].field, "stage");
  EXPECT_EQ(a.conflicts[2].value, "2");
  for (const ConfigConflict& c : a.conflicts) EXPECT_FALSE(c.excluded);
  // A conflict leaves the given value in place.
  EXPECT_EQ(a.settings.stage, Stage::zero3);
}

TEST(DeepSpeedSettings, BytesPerParamIsExcludedByAConfigThatSetsThePrecision) {
  PlanInputs in;
  SharedSettings given;
  given.bytes_per_param = true;
  const AppliedConfig a = apply_deepspeed_config(config(kStage2Offload), "ds.json", given, 0, in);
  ASSERT_EQ(a.conflicts.size(), 1u);
  EXPECT_EQ(a.conflicts[0].field, "bytes_per_param");
  EXPECT_EQ(a.conflicts[0].key, "bf16/fp16");
  EXPECT_TRUE(a.conflicts[0].excluded);
  EXPECT_FALSE(a.settings.precision.has_value());
}

TEST(DeepSpeedSettings, ZeroPlusPlusAgreesByItsSwitchesAndTheConfigKeepsItsPartition) {
  const deepspeed::DeepSpeedConfig c = config(
      R"({"zero_optimization": {"stage": 3, "zero_quantized_weights": true,
                                "zero_hpz_partition_size": 4}})");
  PlanInputs in;
  SharedSettings given;
  given.zeropp = ZeroPlusPlus{.qwz = true, .hpz = true};  // --zeropp qwz,hpz
  AppliedConfig a = apply_deepspeed_config(c, "ds.json", given, 0, in);
  EXPECT_TRUE(a.conflicts.empty());
  ASSERT_TRUE(a.settings.zeropp.has_value());
  EXPECT_EQ(a.settings.zeropp->hpz_size, 4);
  EXPECT_TRUE(a.settings.zeropp->hpz);  // over the config's 4 GPUs, not the node

  given.zeropp = ZeroPlusPlus{};  // --zeropp none
  a = apply_deepspeed_config(c, "ds.json", given, 0, in);
  ASSERT_EQ(a.conflicts.size(), 1u);
  EXPECT_EQ(a.conflicts[0].field, "zeropp");
  EXPECT_EQ(a.conflicts[0].value, deepspeed::zeropp_summary(c.zeropp));
}

TEST(DeepSpeedSettings, AutoBucketSizesComeFromTheHiddenSize) {
  const deepspeed::DeepSpeedConfig c = config(
      R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
          "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto"}})");
  PlanInputs in;
  apply_deepspeed_config(c, "ds.json", {}, 4096, in);
  EXPECT_EQ(in.buffer_settings.reduce_bucket_size, 4096u * 4096u);
  EXPECT_EQ(in.buffer_settings.prefetch_bucket_size, 4096u * 4096u * 9 / 10);
  EXPECT_EQ(in.buffer_settings.param_persistence_threshold, 40960u);
  EXPECT_EQ(in.buffers_source,
            "ds.json; \"auto\" from h = 4096 as Hugging Face fills it: reduce_bucket_size = h^2, "
            "stage3_prefetch_bucket_size = 0.9 h^2, stage3_param_persistence_threshold = 10 h");

  // Without a model: DeepSpeed's defaults, and the source says why.
  PlanInputs without;
  apply_deepspeed_config(c, "ds.json", {}, 0, without);
  EXPECT_EQ(without.buffer_settings.reduce_bucket_size,
            deepspeed::BufferSettings{}.reduce_bucket_size);
  EXPECT_EQ(without.buffers_source,
            "ds.json; \"auto\" sizes at DeepSpeed's defaults, no model to size them");

  // An absurd hidden size saturates instead of wrapping.
  PlanInputs huge;
  apply_deepspeed_config(c, "ds.json", {}, UINT64_MAX / 2, huge);
  EXPECT_EQ(huge.buffer_settings.reduce_bucket_size, UINT64_MAX);
  EXPECT_EQ(huge.buffer_settings.param_persistence_threshold, UINT64_MAX);
}

TEST(DeepSpeedSettings, WordsNameEachValueAndReadBack) {
  for (const plan::Precision p :
       {plan::Precision::fp16, plan::Precision::bf16, plan::Precision::fp32}) {
    EXPECT_EQ(precision_from_word(precision_word(p)), p);
  }
  for (const plan::Optimizer o :
       {plan::Optimizer::adam, plan::Optimizer::sgd_momentum, plan::Optimizer::sgd}) {
    EXPECT_EQ(optimizer_from_word(optimizer_word(o)), o);
  }
  EXPECT_EQ(optimizer_from_word("adamw"), plan::Optimizer::adam);
  EXPECT_FALSE(precision_from_word("fp8").has_value());
}

}  // namespace
}  // namespace zerodp::report
