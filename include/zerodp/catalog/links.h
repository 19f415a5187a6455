// The links a training step's collectives cross: inside a node (NVLink, PCIe) and between
// nodes (InfiniBand, a cloud's fabric), each with the rate the planner times them at and where
// that rate is published.
//
// Contract:
//  - `bytes_per_second` is per GPU, one direction, in the unit of nccl-tests' bus bandwidth
//    (busbw: what each GPU sends over a ring, 2(n−1)/n of the buffer for an all-reduce,
//    (n−1)/n for a gather or a reduce-scatter; nccl-tests doc/PERFORMANCE.md), which is the
//    unit of the planner's ring bytes (plan/comm.h): bytes / rate is a collective's seconds.
//  - `measured`: the rate is a published NCCL measurement on that link (8 GPUs of a node
//    inside it; across nodes a node's bus bandwidth shared by its GPUs, or one NIC's); else it
//    is the link's nominal rate, which no run reaches: a time from it is a lower bound.
//  - An inter-node link's rate is one NIC's, one NIC a GPU (DGX and HGX servers, the clouds'
//    GPU instances), unless `per_node`, where it is the node's NICs together. A ring across
//    nodes runs NCCL's channels over all of a node's NICs: its bus rate is theirs together
//    (NVIDIA measures 192 GB/s on a DGX A100's eight 200 Gb/s NICs): bus_rate_across_nodes().
//  - Ring measurements are used (NCCL_ALGO=RING, or NVLink SHARP off): the gathers and
//    reduce-scatters ZeRO runs do not get the all-reduce's NVLS speed-up, and two-node tree
//    figures exceed the wire.
//  - find_link() matches a name as catalog/names.h compares names; default links are those of
//    the card's usual 8-GPU server (an assumption the plan prints), none where that server is
//    not one kind.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace zerodp::catalog {

enum class LinkLevel { intra_node, inter_node };

struct LinkSpec {
  std::string_view name;  // --intra-node / --inter-node's word: "nvlink4"
  LinkLevel level;
  std::string_view what;     // "NVLink 4 (H100, H200 SXM)"
  double bytes_per_second;   // inside: a ring's bus rate; across: a NIC's (a node's: per_node)
  bool measured;             // a published NCCL figure, not the nominal rate
  bool per_node;             // the node's NICs shared by its GPUs
  std::string_view nominal;  // the link's published rate, for people
  std::string_view quoted;   // the measurement's or the rate's own words
  std::string_view source;   // where they are
};

std::span<const LinkSpec> link_catalogue();
const LinkSpec* find_link(std::string_view name);

// The bus rate of a ring across nodes of `gpus_per_node` GPUs (>= 1) over an inter-node link.
double bus_rate_across_nodes(const LinkSpec& link, int gpus_per_node);

// The usual server of a card: its link inside the node, its network, its GPUs a node (8 for
// the SXM and OAM boards of DGX, HGX and the clouds); nullptr / nullopt where unknown.
struct UsualServer {
  const LinkSpec* intra = nullptr;
  const LinkSpec* inter = nullptr;
  std::optional<int> gpus_per_node;
  std::string_view described;  // "an 8-GPU HGX H100 with a 400 Gb/s NDR NIC a GPU"
};
UsualServer usual_server(std::string_view gpu_name);

}  // namespace zerodp::catalog
