// Two-level communication and ZeRO++ (deepspeed/topology.h), worked out by hand from the contract
// on a 70B-class model over 8 nodes of 8 GPUs, and checked against the flat ring column.
#include <gtest/gtest.h>

#include "zerodp/deepspeed/topology.h"
#include "zerodp/plan/comm.h"

namespace zerodp::deepspeed {
namespace topology_test {

// 64 · 1.1e9: every division below is exact, so the expected values are plain integers.
constexpr std::uint64_t kPhi = 70'400'000'000;
const plan::BytesPerParam kMixed{2, 2, 12};
const Topology k8x8{8, 8};

TEST(Topology, TwoLevelsAddUpToTheRingColumn) {
  // A hierarchical collective moves what the flat ring moves, split by level, at every stage.
  for (Stage stage : kStages) {
    for (const Topology t : {Topology{8, 8}, Topology{4, 2}, Topology{1, 16}, Topology{16, 1}}) {
      const LevelBytes b = level_step_bytes(stage, kPhi, kMixed, t);
      EXPECT_EQ(b.intra + b.inter, plan::ring_step_bytes(stage, kPhi, kMixed, t.gpus()))
          << stage_name(stage) << " " << t.gpus_per_node << "x" << t.nodes;
    }
  }
}

TEST(Topology, ZeroThreeByHand) {
  // Three collectives of 2Φ bytes: 7/8 of each inside the node, 7/64 of each across nodes.
  const LevelBytes b = level_step_bytes(Stage::zero3, kPhi, kMixed, k8x8);
  EXPECT_EQ(b.intra, 3 * 2 * kPhi / 8 * 7);
  EXPECT_EQ(b.inter, 3 * 2 * kPhi / 64 * 7);
  // One node: nothing crosses a node; one GPU a node: nothing stays inside one.
  EXPECT_EQ(level_step_bytes(Stage::zero3, kPhi, kMixed, {8, 1}).inter, 0u);
  EXPECT_EQ(level_step_bytes(Stage::zero3, kPhi, kMixed, {1, 8}).intra, 0u);
}

TEST(Topology, ZeroPlusPlusCutsTheCrossNodeVolumeToAQuarter) {
  const ZeroPlusPlus all{.qwz = true, .hpz = true, .qgz = true, .hpz_size = 8};
  const LevelBytes plain = level_step_bytes(Stage::zero3, kPhi, kMixed, k8x8);
  const LevelBytes zpp = level_step_bytes(Stage::zero3, kPhi, kMixed, k8x8, all);
  // Across nodes: int8 forward gather (Φ) + no backward gather + int4 gradients (Φ/2), each
  // times 7/64; plain ZeRO-3 sends 3 × 2Φ × 7/64.
  EXPECT_EQ(zpp.inter, (kPhi + kPhi / 2) / 64 * 7);
  EXPECT_EQ(zpp.inter * 4, plain.inter);
  // Inside the node: int8 forward gather, the 16-bit backward gather over the secondary
  // partition, int4 gradients, each times 7/8.
  EXPECT_EQ(zpp.intra, (kPhi + 2 * kPhi + kPhi / 2) / 8 * 7);
  // The paper's count: 3M to 0.75M.
  EXPECT_DOUBLE_EQ(zeropp_cross_node_volume_in_m(kMixed, {}), 3.0);
  EXPECT_DOUBLE_EQ(zeropp_cross_node_volume_in_m(kMixed, all), 0.75);
  EXPECT_DOUBLE_EQ(zeropp_cross_node_volume_in_m(kMixed, {.qwz = true}), 2.0);
}

TEST(Topology, ZeroPlusPlusChangesZeroThreeOnly) {
  const ZeroPlusPlus all{.qwz = true, .hpz = true, .qgz = true, .hpz_size = 8};
  for (Stage stage : {Stage::dp, Stage::zero1, Stage::zero2}) {
    const LevelBytes plain = level_step_bytes(stage, kPhi, kMixed, k8x8);
    const LevelBytes zpp = level_step_bytes(stage, kPhi, kMixed, k8x8, all);
    EXPECT_EQ(zpp.intra, plain.intra);
    EXPECT_EQ(zpp.inter, plain.inter);
    EXPECT_EQ(hpz_secondary_bytes(stage, kPhi, kMixed, all), 0u);
  }
}

TEST(Topology, HpzCostsASecondaryShardOfTheParams) {
  // 16-bit params sharded over the node's 8 GPUs: 2 × 8.8e9 bytes per GPU, rounded up to
  // whole elements when h does not divide Φ.
  EXPECT_EQ(hpz_secondary_bytes(Stage::zero3, kPhi, kMixed, {.hpz = true, .hpz_size = 8}),
            2 * kPhi / 8);
  EXPECT_EQ(hpz_secondary_bytes(Stage::zero3, 10, kMixed, {.hpz = true, .hpz_size = 4}), 2u * 3);
  EXPECT_EQ(hpz_secondary_bytes(Stage::zero3, kPhi, kMixed, {}), 0u);
  // A secondary group of 4 inside a node of 8: the backward gather moves 3/4 of 2Φ inside.
  const LevelBytes b =
      level_step_bytes(Stage::zero3, kPhi, kMixed, k8x8, {.hpz = true, .hpz_size = 4});
  EXPECT_EQ(b.intra, 2 * (2 * kPhi / 8 * 7) + 2 * kPhi / 4 * 3);
  EXPECT_EQ(b.inter, 2 * (2 * kPhi / 64 * 7));
}

TEST(Topology, ZeroPlusPlusInWords) {
  EXPECT_EQ(zeropp_summary({.qwz = true, .hpz = true, .qgz = true, .hpz_size = 8}),
            "qwZ, hpZ (8 GPUs), qgZ");
  EXPECT_EQ(zeropp_summary({}), "off");
}

}  // namespace topology_test
}  // namespace zerodp::deepspeed
