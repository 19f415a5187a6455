#include "zerodp/catalog/links.h"

#include <array>

#include "zerodp/catalog/gpus.h"
#include "zerodp/catalog/names.h"
#include "zerodp/common/error.h"

namespace zerodp::catalog {
namespace {

constexpr std::string_view kMlEngineering =
    "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/"
    "network/README.md";

// Read on 2026-12-07. docs/planner.md ("Step time") lists what was looked for and not found
// (a published NCCL figure for PCIe 4 nodes and for p4d's EFA).
constexpr std::array<LinkSpec, 9> kLinks{{
    {"nvlink3", LinkLevel::intra_node, "NVLink 3 (A100 SXM)", 232.54e9, true, false,
     "600 GB/s both ways, 300 GB/s each",
     "all_reduce_perf -g 8 on one A100 node: 'result: 232.54GB/s' busbw (median of three "
     "reports: 230.77, 232.54, 234.89)",
     "https://github.com/NVIDIA/nccl-tests/issues/175"},
    {"nvlink4", LinkLevel::intra_node, "NVLink 4 (H100, H200 SXM)", 367.2e9, true, false,
     "900 GB/s both ways, 450 GB/s each",
     "8 x H200, 'all-reduce, NCCL_NVLS_ENABLE=0 | Ring | 367.2GBps | 82%'", kMlEngineering},
    {"nvlink5", LinkLevel::intra_node, "NVLink 5 (B200)", 682.2e9, true, false,
     "1,800 GB/s both ways, 900 GB/s each",
     "8 x B200, all-reduce busbw '| 8 | NVLS | 838.0GBps | 682.2GBps | 1.23x |' (Ring: 682.2)",
     kMlEngineering},
    {"pcie4", LinkLevel::intra_node, "PCIe 4.0 x16 (no NVLink)", 31e9, false, false,
     "'| PCIe 4 | ~2.0 | 16 | 31 | 62 |' GB/s each way, both ways", "the nominal rate",
     kMlEngineering},
    {"pcie5", LinkLevel::intra_node, "PCIe 5.0 x16 (no NVLink)", 28e9, true, false,
     "'| PCIe 5 | ~4.0 | 16 | 63 | 126 |' GB/s each way, both ways",
     "8 x RTX 5090 on PCIe 5: '8 GPU max performance : bwbus 28GB/s'",
     "https://github.com/NVIDIA/nccl/issues/1639"},
    {"ib-hdr", LinkLevel::inter_node, "InfiniBand HDR, 200 Gb/s a GPU (DGX A100)", 24e9, true,
     false, "200 Gb/s (25 GB/s) a NIC",
     "'On an Nvidia DGX-A100 system we have 8x200Gbit/s IB cards and we measure 192GB/s "
     "AllReduce BusBW' (24 GB/s a NIC)",
     "https://github.com/NVIDIA/nccl/issues/812"},
    {"ib-ndr", LinkLevel::inter_node, "InfiniBand NDR, 400 Gb/s a GPU (DGX H100)", 46e9, true,
     false, "400 Gb/s (50 GB/s) a NIC",
     "'For NDR @ 400Gbps you should see 46-48GB/s per NIC' (the lower figure)",
     "https://github.com/NVIDIA/nccl-tests/issues/290"},
    {"efa-p4d", LinkLevel::inter_node, "AWS EFA of p4d/p4de, 400 Gbps a node", 50e9, false, true,
     "400 Gbps (50 GB/s) a node, 4 x 100 Gb/s",
     "'P4d instances offer 400 Gbps of aggregate network bandwidth' (the nominal rate)",
     "https://github.com/awsdocs/amazon-ec2-user-guide/blob/"
     "d289961421fa79447add68ca26e3ec5ae96fdf41/doc_source/accelerated-computing-instances.md"},
    {"efa-p5", LinkLevel::inter_node, "AWS EFA of p5/p5e/p5en, 3200 Gbps a node", 364.87e9, true,
     true, "3,200 Gbps (400 GB/s) a node",
     "4 x p5en.48xlarge (8 x H200), 4GiB all-reduce over 32 ranks, Ring: '364.87GBps busbw'",
     kMlEngineering},
}};

}  // namespace

std::span<const LinkSpec> link_catalogue() {
  return kLinks;
}

const LinkSpec* find_link(std::string_view name) {
  const std::string wanted = normalised_name(name);
  for (const LinkSpec& link : kLinks) {
    if (normalised_name(link.name) == wanted) return &link;
  }
  return nullptr;
}

double bus_rate_across_nodes(const LinkSpec& link, int gpus_per_node) {
  ZERODP_CHECK(link.level == LinkLevel::inter_node && gpus_per_node >= 1);
  return link.per_node ? link.bytes_per_second : link.bytes_per_second * gpus_per_node;
}

UsualServer usual_server(std::string_view gpu_name) {
  const GpuSpec* card = find_gpu(gpu_name);
  if (card == nullptr) return {};
  const std::string_view name = card->name;
  if (name == "a100-40gb" || name == "a100-80gb") {
    return {find_link("nvlink3"), find_link("ib-hdr"), 8,
            "an 8-GPU HGX A100 (SXM) with a 200 Gb/s HDR NIC a GPU, as DGX A100"};
  }
  if (name == "h100-80gb" || name == "h200") {
    return {find_link("nvlink4"), find_link("ib-ndr"), 8,
            "an 8-GPU HGX H100/H200 with a 400 Gb/s NDR NIC a GPU, as DGX H100"};
  }
  if (name == "b200") {
    return {find_link("nvlink5"), find_link("ib-ndr"), 8,
            "an 8-GPU HGX B200 with a 400 Gb/s NIC a GPU, as DGX B200"};
  }
  if (name == "h100-nvl") {
    return {find_link("pcie5"), nullptr, std::nullopt, "a PCIe 5 server (NVLink bridges pairs)"};
  }
  if (name == "l40s" || name == "l40" || name == "l4" || name == "a10g" || name == "rtx-3090" ||
      name == "rtx-4090" || name == "rtx-a6000" || name == "rtx-6000-ada") {
    return {find_link("pcie4"), nullptr, std::nullopt, "a PCIe 4 server, no NVLink"};
  }
  return {};
}

}  // namespace zerodp::catalog
