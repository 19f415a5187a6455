// The engine's step predicted from kernel rates (predict/schedule.h): each unit's FLOPs are
// exactly what model/gemm.h counts its products doing, the compute at rates divides them as
// the planner does, the optimizer updates a rank's own shard, and compute slowed beside the
// link lengthens an overlapped step by exactly the time it lost while a step without overlap
// (which never computes beside the link) is unchanged.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "zerodp/model/gemm.h"
#include "zerodp/model/gpt.h"
#include "zerodp/model/mlp.h"
#include "zerodp/predict/schedule.h"

namespace zerodp::predict {
namespace {

// The FLOPs gemm() counted in each unit's forward and backward of one micro-batch.
std::vector<UnitFlops> counted_flops(model::Model& m, const model::MicroBatch& batch) {
  std::vector<float> params(m.param_count()), grads(m.param_count(), 0.0f);
  std::vector<float> frozen(m.frozen_count());  // a LoRA model's base
  model::init_all(m, params, 7, frozen);
  model::set_gemm_clock(model::GemmClock::wall);
  m.begin_micro_batch(batch);
  std::vector<UnitFlops> out(m.units().size());
  for (std::size_t u = 0; u < out.size(); ++u) {
    const double before = model::gemm_stats().flops;
    m.forward(static_cast<int>(u), model::flat_unit_views(m, u, params, {}, frozen));
    out[u].forward = model::gemm_stats().flops - before;
  }
  for (std::size_t u = out.size(); u-- > 0;) {
    const double before = model::gemm_stats().flops;
    m.backward(static_cast<int>(u), model::flat_unit_views(m, u, params, grads, frozen));
    out[u].backward = model::gemm_stats().flops - before;
  }
  model::set_gemm_clock(model::GemmClock::off);
  return out;
}

void expect_same_flops(const std::vector<UnitFlops>& predicted,
                       const std::vector<UnitFlops>& counted) {
  ASSERT_EQ(predicted.size(), counted.size());
  for (std::size_t u = 0; u < counted.size(); ++u) {
    // Whole numbers far below 2^53: both sides are exact.
    EXPECT_EQ(predicted[u].forward, counted[u].forward) << "unit " << u;
    EXPECT_EQ(predicted[u].backward, counted[u].backward) << "unit " << u;
  }
}

TEST(UnitFlops, AreTheMlpsProductsAsGemmCountsThem) {
  const model::MlpConfig c{.width = 24, .depth = 3};
  model::Mlp mlp(c);
  const std::size_t B = 5;
  std::vector<float> inputs(B * c.width, 0.5f), targets(B * c.width, 0.25f);
  const std::vector<UnitFlops> counted =
      counted_flops(mlp, {.samples = B, .inputs = inputs, .targets = targets});
  expect_same_flops(unit_flops(MlpShape{.width = 24, .depth = 3}, B), counted);
  EXPECT_EQ(counted[0].backward, 2.0 * B * 24 * 24);  // the input needs no gradient
  EXPECT_EQ(counted[1].backward, 4.0 * B * 24 * 24);
}

TEST(UnitFlops, AreTheGptsProductsAsGemmCountsThem) {
  // A context of 80: one block of 64 queries and one of 16, so the causal blocks' areas count.
  // Rank 0 trains every parameter; rank 3 trains adapters beside a frozen base, whose products
  // run without their weight gradients, on one, four or two of the projections.
  const std::pair<int, unsigned> runs[] = {{0, 1u}, {3, 1u}, {3, 15u}, {3, 10u}};
  for (const auto& [rank, targets] : runs) {
    for (bool checkpointing : {false, true}) {
      model::GptConfig c;
      c.layers = 2, c.heads = 2, c.hidden = 16, c.seq_len = 80;
      c.checkpoint_activations = checkpointing;
      c.lora_rank = rank;
      c.lora_targets = targets;
      model::GptModel gpt(c);
      const std::size_t B = 2;
      std::vector<std::uint8_t> tokens(B * (c.seq_len + 1));
      for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::uint8_t>(i * 7);
      const std::vector<UnitFlops> counted = counted_flops(gpt, {.samples = B, .tokens = tokens});
      const GptShape shape{.layers = 2,
                           .heads = 2,
                           .hidden = 16,
                           .seq_len = 80,
                           .checkpoint_activations = checkpointing,
                           .lora_rank = std::uint64_t(rank),
                           .lora_targets = targets};
      SCOPED_TRACE("LoRA rank " + std::to_string(rank) + ", targets " + std::to_string(targets) +
                   (checkpointing ? ", checkpointing" : ""));
      expect_same_flops(unit_flops(shape, B), counted);
      EXPECT_EQ(counted.front().forward, 0.0);  // the embeddings are looked up
      // A frozen embedding takes no gradient.
      if (rank > 0) EXPECT_EQ(counted.front().backward, 0.0);
    }
  }
}

// Two MLP layers of 32 x 32 + 32 (1056 parameters, one bucket each) over 2 hosts of one rank.
EngineRun two_layers(Stage stage) {
  EngineRun run;
  run.model = MlpShape{.width = 32, .depth = 2};
  run.stage = stage;
  run.ranks = 2;
  run.micro_batch = 4;
  run.bucket_bytes = 2 * 1056;
  run.mpi = true;
  return run;
}
const Link kSecondsAreBytes{8.0, 0.0, 1.0};  // 1 byte a second of payload: seconds are bytes

TEST(ComputeAtRates, IsEachUnitsFlopsOverTheRateAndTheOptimizersShard) {
  EngineRun run = two_layers(Stage::dp);
  run.grad_accum = 3;
  const KernelRates rates{.forward_flops_per_second = 1e6,
                          .backward_flops_per_second = 2e6,
                          .optimizer_params_per_second = 1e3,
                          .other_seconds = 0.25,
                          .beside_link = 0.5};
  const StepCompute c = compute_at_rates(run, 0, rates);
  const double layer = 2.0 * 4 * 32 * 32;  // one layer's forward, one micro-step
  ASSERT_EQ(c.forward.size(), 2u);
  EXPECT_DOUBLE_EQ(c.forward[1], 3 * layer / 1e6);
  EXPECT_DOUBLE_EQ(c.backward[0], 3 * layer / 2e6);
  EXPECT_DOUBLE_EQ(c.backward[1], 3 * 2 * layer / 2e6);
  EXPECT_DOUBLE_EQ(c.optimizer, 2112 / 1e3);  // stage 0: every parameter
  EXPECT_DOUBLE_EQ(c.other, 0.25);
  EXPECT_DOUBLE_EQ(c.beside_link, 0.5);
  // Above stage 0 each rank updates its chunk of every bucket; together, every parameter.
  for (int ranks : {2, 3}) {
    EngineRun sharded = two_layers(Stage::zero1);
    sharded.ranks = ranks;
    std::uint64_t all = 0;
    for (int r = 0; r < ranks; ++r) all += optimizer_params(sharded, r);
    EXPECT_EQ(all, 2112u) << ranks << " ranks";
  }
  EXPECT_EQ(optimizer_params(two_layers(Stage::zero1), 0), 1056u);
}

StepCompute paced(double pace) {
  StepCompute c{{100, 100}, {4000, 4000}, 0, 0};
  c.beside_link = pace;
  return c;
}

TEST(PredictStep, ComputeBesideTheLinkLosesWhatItsPaceSays) {
  // Stage 0, overlap: layer 1's backward (4000) ends, its all-reduce (2 x 1056 bytes) starts
  // and layer 0's backward runs beside it. At pace p that backward loses (1 - p) of each
  // second the link is busy, so the step is (1 - p) x 2112 longer; nothing else overlaps (the
  // last all-reduce and the scalars are waited after the backward).
  const EngineRun run = two_layers(Stage::dp);
  const ScheduledStep full = predict_step(run, 1, kSecondsAreBytes, paced(1.0), true);
  for (double pace : {0.5, 0.25}) {
    const ScheduledStep slow = predict_step(run, 1, kSecondsAreBytes, paced(pace), true);
    EXPECT_DOUBLE_EQ(slow.step_seconds - full.step_seconds, (1 - pace) * 2112) << pace;
    EXPECT_DOUBLE_EQ(slow.compute_seconds - full.compute_seconds, (1 - pace) * 2112) << pace;
    EXPECT_DOUBLE_EQ(slow.comm_seconds, full.comm_seconds);
  }
  // Without overlap no compute runs beside the link: the pace changes nothing.
  for (Stage stage : kStages) {
    EngineRun sync = two_layers(stage);
    sync.prefetch = false;
    EXPECT_DOUBLE_EQ(predict_step(sync, 1, kSecondsAreBytes, paced(0.25), false).step_seconds,
                     predict_step(sync, 1, kSecondsAreBytes, paced(1.0), false).step_seconds)
        << stage_name(stage);
  }
}

}  // namespace
}  // namespace zerodp::predict
