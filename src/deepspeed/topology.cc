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

LevelBytes level_step_bytes(Stage stage, std::uint64_t params, const plan::BytesPerParam& bpp,
                            const Topology& topology, const ZeroPlusPlus& zeropp) {
  ZERODP_CHECK(topology.gpus_per_node >= 1 && topology.nodes >= 1);
  ZERODP_CHECK(zeropp.hpz_span() >= 1 && topology.gpus_per_node % zeropp.hpz_span() == 0);
  const int all = topology.gpus();
  const std::uint64_t p = 2 * std::uint64_t(bpp.params), g = 2 * std::uint64_t(bpp.grads);
  LevelBytes sum;
  switch (stage) {
    case Stage::dp:
      add_collective(sum, params, g, topology, all);
      add_collective(sum, params, g, topology, all);
      break;
    case Stage::zero1:
    case Stage::zero2:
      add_collective(sum, params, g, topology, all);
      add_collective(sum, params, p, topology, all);
      break;
    case Stage::zero3: {
      const std::uint64_t int8 = 2, int4 = 1;
      add_collective(sum, params, zeropp.qwz ? int8 : p, topology, all);
      if (zeropp.hpz) {
        add_collective(sum, params, p, topology, zeropp.hpz_span());
      } else {
        add_collective(sum, params, zeropp.qwz ? int8 : p, topology, all);
      }
      add_collective(sum, params, zeropp.qgz ? int4 : g, topology, all);
      break;
    }
  }
  return sum;
}

double level_seconds(const LevelBytes& bytes, double intra_bandwidth, double inter_bandwidth) {
  ZERODP_CHECK(intra_bandwidth > 0 && inter_bandwidth > 0);
  return static_cast<double>(bytes.intra) / intra_bandwidth +
         static_cast<double>(bytes.inter) / inter_bandwidth;
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
