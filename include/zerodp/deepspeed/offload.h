// Offload (ZeRO-Offload, ZeRO-Infinity): which part of the model state leaves the GPU, where it
// goes, and what crosses PCIe each step for it. ZeRO itself is unchanged: the same bytes are
// sharded and the same collectives run between GPUs.
//
// Contract, per GPU (rank) with S = ceil(Φ/N) elements of every sharded state (plan/memory.h)
// and P, G, K the bytes per parameter:
//   optimizer to cpu   (ZeRO-1, 2, 3) the rank's optimizer states (K·S, fp32 master included)
//                      leave the GPU; the host keeps them and an fp32 copy of the rank's
//                      gradient shard that the CPU optimizer steps on: (K + 4)·S. Each step the
//                      rank's 16-bit gradient shard goes down (G·S) and its updated 16-bit
//                      params come back (P·S; not when the params are offloaded too). (Ren et
//                      al. 2021, ZeRO-Offload, section 4.) At stages 2 and 3 the gradient
//                      shard leaves the GPU too (G·S): stage 2 accumulates it into the host's
//                      fp32 copy (stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu),
//                      stage 3 keeps a 16-bit gradient buffer on the host beside it
//                      (stage3.py:547-551: host + G·S). Stage 1's gradients are whole on every
//                      GPU and stay.
//   optimizer to nvme  the same, with the K·S states on NVMe and the fp32 gradients (4·S) on
//                      the host (Rajbhandari et al. 2021, ZeRO-Infinity).
//   params to cpu/nvme (ZeRO-3 only) the rank's 16-bit param shard (P·S) leaves the GPU for
//                      the host or NVMe; it crosses PCIe up for the forward's and the backward's
//                      gathers (2·P·S a step), and, when the optimizer stays on the GPU, down
//                      once after the update (P·S).
// A stage it does not apply to (optimizer offload at stage 0, param offload below 3) keeps
// its model state on the GPU; applies() says which. Buffers for the transfers are not counted.
// Pure; byte counts exact (they never exceed the model state's, which fits in 64 bits once
// check_fits_in_64_bits() has accepted Φ).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "zerodp/plan/memory.h"

namespace zerodp::deepspeed {

enum class OffloadDevice { none, cpu, nvme };
std::string_view offload_device_name(OffloadDevice device);  // "none", "cpu", "nvme"

struct Offload {
  OffloadDevice optimizer = OffloadDevice::none;
  OffloadDevice params = OffloadDevice::none;
  bool any() const { return optimizer != OffloadDevice::none || params != OffloadDevice::none; }
};

// Whether any of `offload` applies at `stage`.
bool offload_applies(const Offload& offload, Stage stage);

// The bytes per parameter that stay on the GPU at `stage`: K = 0 with the optimizer offloaded
// (stages 1-3) and G = 0 too at stages 2 and 3, P = 0 with the params offloaded (stage 3). For
// model_state_bytes(), min_gpus() and the floor: what is on the GPU shards as before.
plan::BytesPerParam gpu_bytes_per_param(const plan::BytesPerParam& bpp, const Offload& offload,
                                        Stage stage);

struct OffloadBytes {
  std::uint64_t host_bytes = 0;  // per GPU: host memory this rank's offload takes
  std::uint64_t nvme_bytes = 0;  // per GPU
  std::uint64_t pcie_to_host_per_step = 0;
  std::uint64_t pcie_to_gpu_per_step = 0;
};
// nullopt where the offload does not apply at `stage`. Requires ranks >= 1.
std::optional<OffloadBytes> offload_bytes(std::uint64_t params, int ranks, Stage stage,
                                          const plan::BytesPerParam& bpp, const Offload& offload);

}  // namespace zerodp::deepspeed
