#include "zerodp/deepspeed/topology.h"

#include "zerodp/common/error.h"

namespace zerodp::deepspeed {
namespace {

using u128 = unsigned __int128;

// numerator / denominator rounded to the nearest integer (halves up).
std::uint64_t rounded(u128 numerator, u128 denominator) {
  return static_cast<std::uint64_t>((2 * numerator + denominator) / (2 * denominator));
}

// A collective over a buffer of `half_bytes_per_param`/2 bytes a parameter (half-bytes, so
// that qgZ's int4 stays an integer): what each GPU sends inside its node and across nodes.
void add_collective(LevelBytes& sum, std::uint64_t params, std::uint64_t half_bytes_per_param,
                    const Topology& t, int group) {
  const u128 buffer_halves = u128(params) * half_bytes_per_param;
  const int n = t.gpus_per_node, k = t.nodes;
  if (group <= n) {  // inside one node (hpZ's backward gather, or a single node)
    sum.intra += rounded(buffer_halves * (group - 1), u128(2) * group);
    return;
  }
  sum.intra += rounded(buffer_halves * (n - 1), u128(2) * n);
  sum.inter += rounded(buffer_halves * (k - 1), u128(2) * k * n);
}

}  // namespace

std::vector<LevelCollective> level_collectives(Stage stage, std::uint64_t params,
                                               const plan::BytesPerParam& bpp,
                                               const Topology& topology,
                                               const ZeroPlusPlus& zeropp) {
  ZERODP_CHECK(topology.gpus_per_node >= 1 && topology.nodes >= 1);
  ZERODP_CHECK(zeropp.hpz_span() >= 1 && topology.gpus_per_node % zeropp.hpz_span() == 0);
  const int all = topology.gpus();
  const std::uint64_t p = 2 * std::uint64_t(bpp.params), g = 2 * std::uint64_t(bpp.grads);
  std::vector<LevelCollective> out;
  auto add = [&](CollectiveRole role, std::uint64_t half_bytes, int group) {
    LevelCollective c{role, {}};
    add_collective(c.bytes, params, half_bytes, topology, group);
    out.push_back(c);
  };
  switch (stage) {
    case Stage::dp:
      add(CollectiveRole::gradient_all_reduce, g, all);
      // The all-reduce's all-gather half, rounded on its own as a ring runs it.
      add_collective(out.back().bytes, params, g, topology, all);
      break;
    case Stage::zero1:
    case Stage::zero2:
      add(CollectiveRole::gradient_reduce_scatter, g, all);
      add(CollectiveRole::updated_params_gather, p, all);
      break;
    case Stage::zero3: {
      const std::uint64_t int8 = 2, int4 = 1;
      add(CollectiveRole::forward_gather, zeropp.qwz ? int8 : p, all);
      if (zeropp.hpz) {
        add(CollectiveRole::backward_gather, p, zeropp.hpz_span());
      } else {
        add(CollectiveRole::backward_gather, zeropp.qwz ? int8 : p, all);
      }
      add(CollectiveRole::gradient_reduce_scatter, zeropp.qgz ? int4 : g, all);
      break;
    }
  }
  return out;
}

LevelBytes level_step_bytes(Stage stage, std::uint64_t params, const plan::BytesPerParam& bpp,
                            const Topology& topology, const ZeroPlusPlus& zeropp) {
  LevelBytes sum;
  for (const LevelCollective& c : level_collectives(stage, params, bpp, topology, zeropp)) {
    sum.intra += c.bytes.intra;
    sum.inter += c.bytes.inter;
  }
  return sum;
}

double zeropp_cross_node_volume_in_m(const plan::BytesPerParam& bpp, const ZeroPlusPlus& zeropp) {
  const double p = bpp.params, g = bpp.grads;
  const double forward = zeropp.qwz ? 1.0 : p;
  const double backward = zeropp.hpz ? 0.0 : forward;
  const double gradients = zeropp.qgz ? 0.5 : g;
  return (forward + backward + gradients) / p;
}

std::uint64_t hpz_secondary_bytes(Stage stage, std::uint64_t params, const plan::BytesPerParam& bpp,
                                  const ZeroPlusPlus& zeropp) {
  if (stage != Stage::zero3 || !zeropp.hpz) return 0;
  const std::uint64_t h = zeropp.hpz_span();
  return std::uint64_t(bpp.params) * ((params + h - 1) / h);
}

std::string zeropp_summary(const ZeroPlusPlus& zeropp) {
  if (!zeropp.any()) return "off";
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (zeropp.qwz) add("qwZ");
  if (zeropp.hpz) add("hpZ (" + std::to_string(zeropp.hpz_span()) + " GPUs)");
  if (zeropp.qgz) add("qgZ");
  return out;
}

}  // namespace zerodp::deepspeed
