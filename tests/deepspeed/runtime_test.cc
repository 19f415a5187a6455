// The GPU peak's terms beyond model state and activations (deepspeed/runtime.h), worked out by hand
// from DeepSpeed's buffer sizes, and the least N that brings the peak within a GPU.
#include <gtest/gtest.h>

#include <random>

#include "zerodp/deepspeed/runtime.h"
#include "zerodp/plan/feasibility.h"

namespace zerodp::deepspeed {
namespace runtime_test {

constexpr std::uint64_t kPhi = 8'000'000'000, kLargest = 500'000'000;
const plan::BytesPerParam kMixed{2, 2, 12};
const RuntimeModel kModel{kPhi, kLargest, 300'000, std::nullopt};
const BufferSettings kDefaults;
constexpr std::uint64_t kCuda = 2'000'000'000;

RuntimeTerms terms(Stage stage, int ranks, const BufferSettings& b = kDefaults,
                   const Offload& offload = {}, const ZeroPlusPlus& zeropp = {}) {
  return runtime_terms(stage, ranks, {kModel, kMixed, offload, true, b, zeropp, kCuda});
}

TEST(Runtime, StageZeroFlattensFiveHundredMillionElementBuckets) {
  const RuntimeTerms t = terms(Stage::dp, 8);
  EXPECT_EQ(t.reduce_buffers, 2 * 500'000'000u);
  EXPECT_EQ(t.step_fp32_grads, 0u);  // every rank steps on its whole gradients
  EXPECT_EQ(t.gathered_params, 0u);
  // A model smaller than a bucket flattens all of it, once.
  const RuntimeModel small{1000, 100, std::nullopt, std::nullopt};
  EXPECT_EQ(runtime_terms(Stage::dp, 8, {small, kMixed, {}, true, kDefaults, {}, 0}).reduce_buffers,
            2 * 1000u);
}

TEST(Runtime, StagesOneAndTwoHoldOneBucketOrTwoWithOverlap) {
  EXPECT_EQ(terms(Stage::zero2, 8).reduce_buffers, 2 * 500'000'000u);
  BufferSettings overlap;
  overlap.overlap_comm = true;
  EXPECT_EQ(terms(Stage::zero1, 8, overlap).reduce_buffers, 2 * 2 * 500'000'000u);
  BufferSettings scattered;
  scattered.contiguous_gradients = false;
  EXPECT_EQ(terms(Stage::zero2, 8, scattered).reduce_buffers, 0u);
  // The optimizer steps on an fp32 copy of the rank's gradient shard: 4 x 1e9.
  EXPECT_EQ(terms(Stage::zero2, 8).step_fp32_grads, 4 * kPhi / 8);
  // Not on the GPU when the optimizer runs on the CPU.
  EXPECT_EQ(
      terms(Stage::zero2, 8, kDefaults, {OffloadDevice::cpu, OffloadDevice::none}).step_fp32_grads,
      0u);
}

TEST(Runtime, StageThreeGathersTheLargestLayerAndThePrefetch) {
  const RuntimeTerms t = terms(Stage::zero3, 8);
  EXPECT_EQ(t.reduce_buffer_held, 2 * 500'000'000u);  // one bucket, for the whole run
  EXPECT_EQ(t.reduce_buffers, 0u);
  EXPECT_EQ(t.gathered_params, 2 * (kLargest + 50'000'000));  // the layer + the prefetch
  EXPECT_EQ(t.persistent_params, 2 * 300'000u);
  // The step works per sub-group of at most 1e9 elements: a 1e9-element shard fills one.
  EXPECT_EQ(t.step_fp32_grads, 4 * 1'000'000'000u);
  EXPECT_EQ(terms(Stage::zero3, 4).step_fp32_grads, 4 * 1'000'000'000u);  // 2e9 shard, capped
  EXPECT_EQ(terms(Stage::zero3, 16).step_fp32_grads, 4 * kPhi / 16);
  // stage3_max_live_parameters caps the prefetch, never the module being computed.
  BufferSettings tight;
  tight.max_live_parameters = kLargest + 10'000'000;
  EXPECT_EQ(terms(Stage::zero3, 8, tight).gathered_params, 2 * (kLargest + 10'000'000));
  tight.max_live_parameters = 1000;
  EXPECT_EQ(terms(Stage::zero3, 8, tight).gathered_params, 2 * kLargest);
}

TEST(Runtime, TheReuseDistanceKeepsTheForwardsLastModulesGathered) {
  // 2e9 elements kept at the turn to backward exceed the largest layer: they and the prefetch
  // window (max_live_parameters 1e9 leaves no room beside them) are gathered.
  RuntimeModel kept = kModel;
  kept.reuse_kept_params = 2'000'000'000;
  const RuntimeRun run{kept, kMixed, {}, true, kDefaults, {}, kCuda};
  EXPECT_EQ(runtime_terms(Stage::zero3, 8, run).gathered_params, 2 * 2'000'000'000u);
  // Fewer than the largest layer: the largest layer and its prefetch, as without it.
  kept.reuse_kept_params = 1000;
  const RuntimeRun small{kept, kMixed, {}, true, kDefaults, {}, kCuda};
  EXPECT_EQ(runtime_terms(Stage::zero3, 8, small).gathered_params, 2 * (kLargest + 50'000'000));
  // 600M kept: the prefetch fits in the 400M of room max_live_parameters leaves.
  kept.reuse_kept_params = 600'000'000;
  const RuntimeRun some{kept, kMixed, {}, true, kDefaults, {}, kCuda};
  EXPECT_EQ(runtime_terms(Stage::zero3, 8, some).gathered_params, 2 * 650'000'000u);
}

TEST(Runtime, HpzKeepsASecondaryShardWhereTheParamsAre) {
  const ZeroPlusPlus hpz{.hpz = true, .hpz_size = 8};
  EXPECT_EQ(terms(Stage::zero3, 64, kDefaults, {}, hpz).hpz_secondary, 2 * kPhi / 8);
  EXPECT_EQ(terms(Stage::zero2, 64, kDefaults, {}, hpz).hpz_secondary, 0u);
  EXPECT_EQ(terms(Stage::zero3, 64, kDefaults, {OffloadDevice::none, OffloadDevice::cpu}, hpz)
                .hpz_secondary,
            0u);
}

// FSDP's limiter only makes the CPU wait for a free before the next all-gather; the frees
// happen at the same point either way, so the allocated gathered params are the root unit,
// the unit computed and the one prefetched, with limit_all_gathers on or off.
TEST(Runtime, FsdpGathersTheRootAndTwoUnitsWithOrWithoutTheLimiter) {
  RuntimeModel model = kModel;
  model.outside_layer_params = 300'000'000;
  model.per_layer_params = 200'000'000;
  RuntimeRun run{model, {2, 2, 4}, {}, true, kDefaults, {}, kCuda};
  run.framework = Framework::fsdp;
  const std::uint64_t expected = 2 * (300'000'000u + 2 * 200'000'000u);
  EXPECT_EQ(runtime_terms(Stage::zero3, 16, run).gathered_params, expected);
  run.fsdp_limit_all_gathers = false;
  EXPECT_EQ(runtime_terms(Stage::zero3, 16, run).gathered_params, expected);
  // Never more than the whole model.
  run.model.params = 500'000'000;
  EXPECT_EQ(runtime_terms(Stage::zero3, 16, run).gathered_params, 2 * 500'000'000u);
}

TEST(Runtime, ThePeakTakesTheLargerPhase) {
  const RuntimeTerms t = terms(Stage::zero2, 8);
  const std::uint64_t state = 30'000'000'000;
  // Backward: 7e9 activations + 1e9 bucket + the largest layer's 16-bit gradient (1e9) > the
  // step's 6e9.
  EXPECT_EQ(t.layer_grads, 2 * kLargest);
  EXPECT_EQ(t.peak(state, 7'000'000'000), state + kCuda + 7'000'000'000 + 2'000'000'000);
  // Step: the 4e9 fp32 gradients and flatten()'s 2e9 16-bit copy > 1e9 activations + 1e9
  // bucket + 1e9 layer gradient.
  EXPECT_EQ(t.step(), 6'000'000'000u);
  EXPECT_EQ(t.peak(state, 1'000'000'000), state + kCuda + 6'000'000'000);
  EXPECT_FALSE(t.step_sets_peak(7'000'000'000));
  EXPECT_TRUE(t.step_sets_peak(1'000'000'000));
  // Without buffers only the allowance is added.
  const RuntimeTerms bare =
      runtime_terms(Stage::zero2, 8, {kModel, kMixed, {}, false, kDefaults, {}, kCuda});
  EXPECT_EQ(bare.peak(state, 5), state + kCuda + 5);
}

TEST(Runtime, TheOptimizersTemporariesFollowItsImplementation) {
  // S = Φ/8 = 1e9 elements a rank at ZeRO-2: FusedAdam none, torch's foreach AdamW one fp32
  // copy (4e9), its single-tensor path two (8e9); the step holds the larger of them and the
  // 2e9 16-bit copy beside the 4e9 fp32 gradients.
  const std::uint64_t shard = kPhi / 8;
  const std::pair<OptimizerImpl, std::uint64_t> impls[] = {{OptimizerImpl::fused, 0},
                                                           {OptimizerImpl::foreach, 4 * shard},
                                                           {OptimizerImpl::single, 8 * shard}};
  for (const auto& [impl, temporaries] : impls) {
    RuntimeRun run{kModel, kMixed, {}, true, kDefaults, {}, kCuda};
    run.optimizer_impl = impl;
    const RuntimeTerms t = runtime_terms(Stage::zero2, 8, run);
    EXPECT_EQ(t.optimizer_temporaries, temporaries) << optimizer_impl_name(impl);
    EXPECT_EQ(t.step_flat_grads, 2 * shard);
    EXPECT_EQ(t.step(), 4 * shard + std::max(2 * shard, temporaries));
    // At ZeRO-3 the step goes sub-group by sub-group (sub_group_size 1e9 by default).
    BufferSettings small = kDefaults;
    small.sub_group_size = 100'000'000;
    run.settings = small;
    const RuntimeTerms z3 = runtime_terms(Stage::zero3, 8, run);
    EXPECT_EQ(z3.optimizer_temporaries, temporaries / shard * 100'000'000);
    // Offloaded, the step runs on the CPU: none of it on the GPU.
    run.offload.optimizer = OffloadDevice::cpu;
    const RuntimeTerms off = runtime_terms(Stage::zero2, 8, run);
    EXPECT_EQ(off.step(), 0u);
  }
  EXPECT_EQ(optimizer_impl_from_name("foreach"), OptimizerImpl::foreach);
  EXPECT_EQ(optimizer_impl_from_name("fast"), std::nullopt);
}

TEST(Runtime, LeastNBringsThePeakWithinTheGpuAndOneFewerDoesNot) {
  std::mt19937_64 rng(14);
  for (int trial = 0; trial < 400; ++trial) {
    const Stage stage = kStages[rng() % 4];
    const RuntimeModel m{1 + rng() % 20'000'000'000, 1 + rng() % 600'000'000, rng() % 1'000'000,
                         std::nullopt};
    const std::uint64_t memory = 1'000'000'000 + rng() % 80'000'000'000;
    const std::uint64_t activations = rng() % 10'000'000'000;
    const Offload offload{rng() % 3 == 0 ? OffloadDevice::cpu : OffloadDevice::none,
                          OffloadDevice::none};
    const plan::BytesPerParam gpu = gpu_bytes_per_param(kMixed, offload, stage);
    const RuntimeRun run{m, kMixed, offload, true, kDefaults, {}, kCuda};
    const auto n = min_gpus_for_peak(stage, run, activations, memory, 1);
    auto peak_at = [&](int ranks) {
      return runtime_terms(stage, ranks, run)
          .peak(plan::model_state_bytes(m.params, ranks, stage, gpu), activations);
    };
    if (!n) {
      EXPECT_GT(peak_at(1 << 30), memory) << trial;  // not even a huge N fits
      continue;
    }
    ASSERT_LE(*n, std::uint64_t(1) << 30) << trial;
    EXPECT_LE(peak_at(static_cast<int>(*n)), memory) << trial;
    if (*n > 1) {
      EXPECT_GT(peak_at(static_cast<int>(*n) - 1), memory) << trial;
    }
  }
}

TEST(Runtime, WithoutTermsTheLeastNIsTheModelStateOnes) {
  // No buffers, no allowance: the seed's least N (plan/feasibility.h), whatever the inputs.
  std::mt19937_64 rng(15);
  for (int trial = 0; trial < 200; ++trial) {
    const Stage stage = kStages[rng() % 4];
    const RuntimeModel m{1 + rng() % 20'000'000'000, 0, std::nullopt, std::nullopt};
    const std::uint64_t memory = 1'000'000'000 + rng() % 80'000'000'000;
    const std::uint64_t activations = rng() % 1'000'000'000;
    EXPECT_EQ(
        min_gpus_for_peak(stage, {m, kMixed, {}, false, kDefaults, {}, 0}, activations, memory, 8),
        plan::min_gpus(m.params, stage, kMixed, memory - activations, 8))
        << trial;
  }
}

}  // namespace runtime_test
}  // namespace zerodp::deepspeed

namespace zerodp::deepspeed {
namespace runtime_lora_test {

// Llama-2-7B with LoRA rank 8 on q and v: 4,194,304 adapters train, the 6,738,415,616 of the
// base stay frozen in 16 bits; its largest layer is the 131,072,000 embedding, its largest
// adapter 8 x 4,096.
constexpr std::uint64_t kAdapters = 4'194'304, kBase = 6'738'415'616;
const plan::BytesPerParam kMixed{2, 2, 12};

RuntimeRun lora_run() {
  RuntimeRun run{{kAdapters, 131'072'000, 266'240, std::nullopt},
                 kMixed,
                 {},
                 true,
                 BufferSettings{},
                 {},
                 2'000'000'000};
  run.model.frozen_params = kBase;
  run.model.largest_trained_params = 8 * 4096;
  run.frozen = {{"16-bit weights", kBase, 2, true}};
  return run;
}

TEST(RuntimeLora, BucketsAndTheStepCoverTheAdaptersZeroThreeGathersTheBase) {
  const RuntimeRun run = lora_run();
  // Stage 0 flattens the adapters' gradients only.
  EXPECT_EQ(runtime_terms(Stage::dp, 8, run).reduce_buffers, 2 * kAdapters);
  // A whole gradient waiting for its reduction is an adapter's, not the embedding's.
  EXPECT_EQ(runtime_terms(Stage::zero2, 8, run).layer_grads, 2u * 8 * 4096);
  // The step copies the adapters' shard: ceil(4,194,304 / 8) fp32 and 16-bit.
  const RuntimeTerms z2 = runtime_terms(Stage::zero2, 8, run);
  EXPECT_EQ(z2.step_fp32_grads, 4u * 524'288);
  EXPECT_EQ(z2.step_flat_grads, 2u * 524'288);
  // ZeRO-3 gathers the embedding and a prefetch bucket of the base, which the adapters alone
  // would not reach.
  EXPECT_EQ(runtime_terms(Stage::zero3, 8, run).gathered_params, 2u * (131'072'000 + 50'000'000));
  RuntimeRun full = run;
  full.model.frozen_params = 0;
  full.frozen.clear();
  EXPECT_EQ(runtime_terms(Stage::zero3, 8, full).gathered_params, 2 * kAdapters);
  // A quantized base dequantizes its largest weight to 16 bits beside the activations.
  RuntimeRun q = run;
  q.dequantized_params = 11008 * 4096;
  EXPECT_EQ(runtime_terms(Stage::dp, 1, q).dequantized_weight, 2u * 11008 * 4096);
  EXPECT_EQ(runtime_terms(Stage::dp, 1, q).backward(),
            runtime_terms(Stage::dp, 1, run).backward() + 2u * 11008 * 4096);
}

TEST(RuntimeLora, TheStateOnTheGpuAddsTheBaseShardedOnlyAtZeroThree) {
  const RuntimeRun run = lora_run();
  for (int n : {1, 3, 8}) {
    for (Stage stage : kStages) {
      const std::uint64_t base = stage == Stage::zero3 ? 2 * ((kBase + n - 1) / n) : 2 * kBase;
      EXPECT_EQ(gpu_state_bytes(stage, n, run),
                plan::model_state_bytes(kAdapters, n, stage, kMixed) + base)
          << n << " " << stage_name(stage);
    }
  }
}

TEST(RuntimeLora, LeastNBringsThePeakWithinTheGpuAndOneFewerDoesNot) {
  std::mt19937_64 rng(55);
  for (int trial = 0; trial < 300; ++trial) {
    const Stage stage = kStages[rng() % 4];
    RuntimeRun run = lora_run();
    run.model.params = 1 + rng() % 200'000'000;
    run.model.frozen_params = 1 + rng() % 80'000'000'000;
    run.frozen = {{"codes", run.model.frozen_params / 2, 1, true},
                  {"state", rng() % 2'000'000'000, 1, false}};
    const std::uint64_t memory = 4'000'000'000 + rng() % 80'000'000'000;
    const std::uint64_t activations = rng() % 10'000'000'000;
    const auto n = min_gpus_for_peak(stage, run, activations, memory, 1);
    auto peak_at = [&](int ranks) {
      return runtime_terms(stage, ranks, run).peak(gpu_state_bytes(stage, ranks, run), activations);
    };
    if (!n) {
      EXPECT_GT(peak_at(1 << 30), memory) << trial;
      continue;
    }
    ASSERT_LE(*n, std::uint64_t(1) << 30) << trial;
    EXPECT_LE(peak_at(static_cast<int>(*n)), memory) << trial;
    if (*n > 1) EXPECT_GT(peak_at(static_cast<int>(*n) - 1), memory) << trial;
  }
}

}  // namespace runtime_lora_test
}  // namespace zerodp::deepspeed
