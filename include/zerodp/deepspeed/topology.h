// Communication on two levels: GPUs inside a node (NVLink, --intra-bandwidth) and nodes over
// the network (--inter-bandwidth), for each stage, with ZeRO++'s three changes to ZeRO-3
// (Wang et al. 2023, "ZeRO++: Extremely Efficient Collective Communication for Giant Model
// Training", section 3).
//
// Contract, with N = n·k GPUs (n per node, k nodes), P and G the bytes of a 16-bit param and
// gradient, and each collective run hierarchically as NCCL and DeepSpeed run them across
// nodes: a collective over a buffer of B bytes moves B·(n−1)/n per GPU inside the node and
// B·(k−1)/(k·n) per GPU across nodes (the node's share of the flat ring's B·(N−1)/N: the two
// levels add up to exactly the ring column's volume, rounded per level to the nearest byte).
//   stage 0     all-reduce of the gradients: a reduce-scatter and an all-gather of G·Φ;
//   stage 1, 2  reduce-scatter of G·Φ, all-gather of the updated params P·Φ;
//   stage 3     all-gather of P·Φ for the forward and again for the backward, reduce-scatter
//               of G·Φ;
//   ZeRO++ (stage 3 only; the ZeRO++ paper and DeepSpeed define it for ZeRO-3):
//     qwZ  the forward all-gather sends int8 weights: 1 byte a parameter at both levels
//          (block scales not counted: one fp32 per 2,048 weights, under 0.2 %);
//     hpZ  a secondary copy of the params, sharded over the h GPUs of a node, serves the
//          backward all-gather: P·Φ·(h−1)/h inside the node, nothing across nodes; it costs
//          every GPU P·ceil(Φ/h) more memory (hpz_secondary_bytes);
//     qgZ  the gradients are reduced with int4 all-to-alls, inside the node then across
//          nodes: 0.5 byte a parameter at both levels instead of G.
//   Time: each collective's bytes (the two levels' together) at the bus rate of the slowest
//   level it crosses, as plan/step_model.h times a step with deepspeed/step_schedule.h.
//   The ZeRO++ paper's own count (section 3, "3M to 0.75M"): the cross-node volume of a
//   ZeRO-3 step in units of M = P·Φ, the forward gather + the backward gather + the gradient
//   reduction, each taken as a whole buffer: 3M plain, 0.5M + 0 + 0.25M with all three.
// Pure; byte counts are exact rounding of the formulas above with 128-bit intermediates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerodp/common/zeropp.h"
#include "zerodp/plan/memory.h"

namespace zerodp::deepspeed {

struct Topology {
  int gpus_per_node = 1;  // n
  int nodes = 1;          // k
  int gpus() const { return gpus_per_node * nodes; }
};

// ZeRO++'s switches are zerodp::ZeroPlusPlus (zerodp/common/zeropp.h): --zeropp qwz,hpz,qgz,
// or the DeepSpeed config's zero_quantized_weights, zero_hpz_partition_size and
// zero_quantized_gradients. Below, hpz's partition is settled (hpz_span() GPUs).

struct LevelBytes {
  std::uint64_t intra = 0;  // per GPU, inside its node
  std::uint64_t inter = 0;  // per GPU, across nodes
};

// A step's collectives, in the order they run, each with the bytes every GPU sends at each
// level: what the step-time model times one by one (deepspeed/step_schedule.h).
enum class CollectiveRole {
  gradient_all_reduce,      // stage 0: a reduce-scatter and an all-gather of the gradients
  forward_gather,           // stage 3: the params, layer by layer, for the forward
  backward_gather,          // stage 3: again for the backward (hpZ: from the node's copy)
  gradient_reduce_scatter,  // stages 1-3
  updated_params_gather,    // stages 1, 2: the updated params, after the optimizer's step
};
struct LevelCollective {
  CollectiveRole role = CollectiveRole::gradient_all_reduce;
  LevelBytes bytes;
};
// Requires hpz_size to divide n (the secondary partition stays inside a node).
std::vector<LevelCollective> level_collectives(Stage stage, std::uint64_t params,
                                               const plan::BytesPerParam& bpp,
                                               const Topology& topology,
                                               const ZeroPlusPlus& zeropp = {});

// The bytes each GPU sends per step at each level for `stage`: level_collectives() summed.
// ZeRO++ changes stage 3 only.
LevelBytes level_step_bytes(Stage stage, std::uint64_t params, const plan::BytesPerParam& bpp,
                            const Topology& topology, const ZeroPlusPlus& zeropp = {});

// The ZeRO++ paper's cross-node volume of a ZeRO-3 step, in units of M = P·Φ: 3 plain,
// 0.75 with qwZ, hpZ and qgZ and the default 16-bit params and grads.
double zeropp_cross_node_volume_in_m(const plan::BytesPerParam& bpp, const ZeroPlusPlus& zeropp);

// hpZ's secondary partition per GPU: P·ceil(Φ/h) at stage 3 with hpZ, else 0.
std::uint64_t hpz_secondary_bytes(Stage stage, std::uint64_t params, const plan::BytesPerParam& bpp,
                                  const ZeroPlusPlus& zeropp);

// "qwZ, hpZ (8 GPUs), qgZ", or "off".
std::string zeropp_summary(const ZeroPlusPlus& zeropp);

}  // namespace zerodp::deepspeed
