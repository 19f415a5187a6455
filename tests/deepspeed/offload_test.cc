// Offload (deepspeed/offload.h) on Φ = 1e9 over N = 8 (S = 125M elements per shard), worked out by
// hand from the contract: what stays on the GPU, what the host and NVMe hold, what crosses PCIe.
#include <gtest/gtest.h>

#include "zerodp/deepspeed/offload.h"
#include "zerodp/plan/feasibility.h"
#include "zerodp/report/report.h"

namespace zerodp::deepspeed {
namespace {

constexpr std::uint64_t kPhi = 1'000'000'000, kS = kPhi / 8;
const plan::BytesPerParam kMixed{2, 2, 12};

TEST(Offload, OptimizerToCpuAtZeroTwo) {
  const Offload o{OffloadDevice::cpu, OffloadDevice::none};
  // On the GPU: the 16-bit params whole, 2 x 1e9; the gradient shard accumulates into the
  // host's fp32 copy.
  EXPECT_EQ(
      plan::model_state_bytes(kPhi, 8, Stage::zero2, gpu_bytes_per_param(kMixed, o, Stage::zero2)),
      2 * kPhi);
  const auto b = offload_bytes(kPhi, 8, Stage::zero2, kMixed, o);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->host_bytes, (12 + 4) * kS);  // master, m, v and the fp32 gradient shard
  EXPECT_EQ(b->nvme_bytes, 0u);
  EXPECT_EQ(b->pcie_to_host_per_step, 2 * kS);  // the 16-bit gradient shard
  EXPECT_EQ(b->pcie_to_gpu_per_step, 2 * kS);   // the updated 16-bit params
  // ZeRO-1 keeps the whole gradients on the GPU: only the states leave it.
  EXPECT_EQ(
      plan::model_state_bytes(kPhi, 8, Stage::zero1, gpu_bytes_per_param(kMixed, o, Stage::zero1)),
      4 * kPhi);
}

TEST(Offload, EverythingOffAtZeroThree) {
  const Offload o{OffloadDevice::cpu, OffloadDevice::cpu};
  EXPECT_EQ(
      plan::model_state_bytes(kPhi, 8, Stage::zero3, gpu_bytes_per_param(kMixed, o, Stage::zero3)),
      0u);  // nothing: the gradient buffer is on the host too
  const auto b = offload_bytes(kPhi, 8, Stage::zero3, kMixed, o);
  // States, the fp32 gradient shard, the 16-bit param shard and the 16-bit gradient buffer.
  EXPECT_EQ(b->host_bytes, (12 + 4 + 2 + 2) * kS);
  EXPECT_EQ(b->pcie_to_host_per_step, 2 * kS);
  // The param shard for the forward's and the backward's gathers; the update stays on the
  // host, where the params live.
  EXPECT_EQ(b->pcie_to_gpu_per_step, 2 * 2 * kS);
}

TEST(Offload, NvmeHoldsWhatItIsGiven) {
  // Params to NVMe, optimizer on the GPU (ZeRO-3): the shard goes down once after the update.
  const auto p =
      offload_bytes(kPhi, 8, Stage::zero3, kMixed, {OffloadDevice::none, OffloadDevice::nvme});
  EXPECT_EQ(p->nvme_bytes, 2 * kS);
  EXPECT_EQ(p->host_bytes, 0u);
  EXPECT_EQ(p->pcie_to_host_per_step, 2 * kS);
  EXPECT_EQ(p->pcie_to_gpu_per_step, 4 * kS);
  // Optimizer to NVMe (ZeRO-2): the states there, the fp32 gradient shard on the host.
  const auto q =
      offload_bytes(kPhi, 8, Stage::zero2, kMixed, {OffloadDevice::nvme, OffloadDevice::none});
  EXPECT_EQ(q->nvme_bytes, 12 * kS);
  EXPECT_EQ(q->host_bytes, 4 * kS);
}

TEST(Offload, StagesItDoesNotApplyToAreUnchanged) {
  const Offload o{OffloadDevice::cpu, OffloadDevice::cpu};
  EXPECT_FALSE(offload_applies(o, Stage::dp));
  EXPECT_FALSE(offload_bytes(kPhi, 8, Stage::dp, kMixed, o).has_value());
  EXPECT_EQ(gpu_bytes_per_param(kMixed, o, Stage::dp), kMixed);
  // Param offload alone does nothing below ZeRO-3.
  EXPECT_FALSE(offload_applies({OffloadDevice::none, OffloadDevice::cpu}, Stage::zero2));
}

TEST(Offload, ThePlanFitsWhatStaysOnTheGpu) {
  // Φ = 1e9 on 8 GPUs of 2.5 GB: without offload ZeRO-2 needs 3.75 GB and ZeRO-3 2 GB, so the
  // cheapest stage that fits is ZeRO-3; with the optimizer on the CPU ZeRO-2 needs 2 GB (the
  // 16-bit params alone) and fits, and ZeRO-1 (4 GB) still does not.
  report::PlanInputs in;
  in.params = kPhi;
  in.gpus = 8;
  in.gpu_memory = 2'500'000'000;
  EXPECT_EQ(report::make_plan(in).cheapest_fitting_stage, 3);
  in.offload.optimizer = OffloadDevice::cpu;
  const report::PlanReport r = report::make_plan(in);
  EXPECT_EQ(r.cheapest_fitting_stage, 2);
  EXPECT_EQ(*r.stages[2].model_state_bytes, 2 * kPhi);
  EXPECT_FALSE(*r.stages[1].fits);
  EXPECT_TRUE(r.stages[2].offload.has_value());
  EXPECT_FALSE(r.stages[0].offload.has_value());
  // The least N agrees with the GPU's bytes: 2Φ <= 2.5e9 from N = 1.
  EXPECT_EQ(*r.stages[2].min_gpus, 1u);
  // The network moves the same bytes with or without offload.
  in.offload = {};
  EXPECT_EQ(report::make_plan(in).stages[2].comm_ring, r.stages[2].comm_ring);
}

}  // namespace
}  // namespace zerodp::deepspeed
