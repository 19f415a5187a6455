// The table of state slots: every name reads one row, the bytes each row makes, and what the
// planner refuses to count.
#include "zerodp/common/optimizers.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "zerodp/common/error.h"
#include "zerodp/plan/memory.h"

namespace zerodp {
namespace {

TEST(Optimizers, EachRowIsItsOwnWordAndInTheOrderOfItsId) {
  std::set<std::string_view> words;
  for (std::size_t i = 0; i < optimizer_rows().size(); ++i) {
    const OptimizerRow& row = optimizer_rows()[i];
    EXPECT_EQ(static_cast<std::size_t>(row.id), i) << row.word;
    EXPECT_TRUE(words.insert(row.word).second) << row.word;
    const std::optional<OptimizerName> named = optimizer_from_name(row.word);
    ASSERT_TRUE(named) << row.word;
    EXPECT_EQ(named->id, row.id) << row.word;
    EXPECT_EQ(&optimizer_row(row.id), &row);
    EXPECT_FALSE(row.source.empty()) << row.word;
    // A quantized slot has its block and size rule; no other row has either.
    bool quantized = false;
    for (const StateSlot& slot : row.slots) quantized |= slot.format == SlotFormat::int8_blockwise;
    EXPECT_EQ(quantized, row.block > 0) << row.word;
    EXPECT_EQ(quantized, row.min_quantized > 0) << row.word;
  }
}

TEST(Optimizers, TheTrainersAndDeepSpeedsNamesReadTheirRows) {
  struct Case {
    const char* name;
    Optimizer id;
    StepImpl impl;
  };
  for (const Case& c : {Case{"adamw_torch_fused", Optimizer::adam, StepImpl::fused},
                        Case{"adamw_torch", Optimizer::adam, StepImpl::foreach},
                        Case{"adamw_hf", Optimizer::adam, StepImpl::single},
                        Case{"adamw_bnb_8bit", Optimizer::adam_8bit, StepImpl::unstated},
                        Case{"paged_adamw_8bit", Optimizer::paged_adam_8bit, StepImpl::unstated},
                        Case{"lion_8bit", Optimizer::lion_8bit, StepImpl::unstated},
                        Case{"lion_32bit", Optimizer::lion, StepImpl::unstated},
                        Case{"adafactor", Optimizer::adafactor, StepImpl::unstated},
                        Case{"FusedLamb", Optimizer::lamb, StepImpl::unstated},
                        Case{"Lion", Optimizer::lion, StepImpl::unstated},
                        Case{"Adagrad", Optimizer::adagrad, StepImpl::unstated},
                        Case{"AdamW", Optimizer::adam, StepImpl::unstated},
                        Case{"ADAMW-8BIT", Optimizer::adam_8bit, StepImpl::unstated}}) {
    const std::optional<OptimizerName> named = optimizer_from_name(c.name);
    ASSERT_TRUE(named) << c.name;
    EXPECT_EQ(named->id, c.id) << c.name;
    EXPECT_EQ(named->impl, c.impl) << c.name;
  }
  EXPECT_FALSE(optimizer_from_name("adamw_9bit"));
  EXPECT_FALSE(optimizer_from_name(""));
  // Known and not counted: a reason, never a row.
  for (const char* name : {"galore_adamw", "OneBitAdam", "ZeroOneAdam", "ademamix_8bit"}) {
    EXPECT_FALSE(optimizer_from_name(name)) << name;
    EXPECT_FALSE(uncounted_optimizer(name).empty()) << name;
  }
  EXPECT_TRUE(uncounted_optimizer("adamw").empty());
}

// Bytes per element as each row's slots make them: mixed precision adds the fp32 master (but
// to pure bf16), fp32 training keeps none.
TEST(Optimizers, EachRowsBytesPerElement) {
  using plan::bytes_per_param;
  using plan::Precision;
  struct Case {
    Optimizer id;
    std::uint32_t mixed_k, fp32_k, block_bytes;
  };
  for (const Case& c :
       {Case{Optimizer::adam, 12, 8, 0}, Case{Optimizer::adam_8bit, 6, 2, 8},
        Case{Optimizer::paged_adam_8bit, 6, 2, 8}, Case{Optimizer::adafactor, 8, 4, 0},
        Case{Optimizer::adafactor_beta1, 12, 8, 0}, Case{Optimizer::lion, 8, 4, 0},
        Case{Optimizer::lion_8bit, 5, 1, 4}, Case{Optimizer::lamb, 12, 8, 0},
        Case{Optimizer::adagrad, 8, 4, 0}, Case{Optimizer::rmsprop, 8, 4, 0},
        Case{Optimizer::sgd_momentum, 8, 4, 0}, Case{Optimizer::sgd, 4, 0, 0}}) {
    const plan::BytesPerParam mixed = bytes_per_param(Precision::bf16, c.id);
    const plan::BytesPerParam fp32 = bytes_per_param(Precision::fp32, c.id);
    const std::string word(optimizer_row(c.id).word);
    EXPECT_EQ(mixed.params, 2u) << word;
    EXPECT_EQ(mixed.grads, 2u) << word;
    EXPECT_EQ(mixed.optimizer, c.mixed_k) << word;
    EXPECT_EQ(fp32.params, 4u) << word;
    EXPECT_EQ(fp32.optimizer, c.fp32_k) << word;
    EXPECT_EQ(mixed.block_bytes, c.block_bytes) << word;
    EXPECT_EQ(mixed.block, c.block_bytes > 0 ? 256u : 0u) << word;
    // Under the size rule every slot is fp32, beside the master.
    if (c.block_bytes > 0) {
      EXPECT_EQ(mixed.small_below, 4096u) << word;
      EXPECT_EQ(mixed.small_optimizer,
                4 + 4 * static_cast<std::uint32_t>(optimizer_row(c.id).slots.size()))
          << word;
      EXPECT_EQ(fp32.small_optimizer,
                4 * static_cast<std::uint32_t>(optimizer_row(c.id).slots.size()))
          << word;
    }
  }
  // Pure bf16: the bf16 params are the master; bf16 m and v.
  EXPECT_EQ(bytes_per_param(Precision::bf16, Optimizer::adam_bf16), (plan::BytesPerParam{2, 2, 4}));
  try {
    (void)bytes_per_param(Precision::fp32, Optimizer::adam_bf16);
    ADD_FAILURE() << "pure bf16 planned in fp32";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "optimizer");
  }
  // 8-bit AdamW on bf16 params (torchtune's): no master, int8 m and v with an fp32 absmax each a
  // block of 256, and a tensor under 4,096 elements with both slots in fp32 (8 bytes, no master).
  for (Optimizer id : {Optimizer::adam_8bit_bf16, Optimizer::paged_adam_8bit_bf16}) {
    const plan::BytesPerParam b = bytes_per_param(Precision::bf16, id);
    EXPECT_EQ(b.total(), 6u);
    EXPECT_EQ(b.block, 256u);
    EXPECT_EQ(b.block_bytes, 8u);
    EXPECT_EQ(b.small_below, 4096u);
    EXPECT_EQ(b.small_optimizer, 8u);
    // 10,000 elements: 20,000 bytes of codes and 40 blocks of 8 bytes (the last one partial).
    EXPECT_EQ(b.optimizer_bytes(10'000), 20'000u + 40u * 8u);
    EXPECT_THROW((void)bytes_per_param(Precision::fp16, id), InvalidArgument);
  }
}

}  // namespace
}  // namespace zerodp
