#include "zerodp/deepspeed/offload.h"
#include "zerodp/common/error.h"
#include "zerodp/common/shard.h"

namespace zerodp::deepspeed {

std::string_view offload_device_name(OffloadDevice device) {
  switch (device) {
    case OffloadDevice::cpu:
      return "cpu";
    case OffloadDevice::nvme:
      return "nvme";
    case OffloadDevice::none:
      break;
  }
  return "none";
}

namespace {
bool optimizer_off(const Offload& o, Stage stage) {
  return o.optimizer != OffloadDevice::none && sharding(stage).optimizer_states;
}
bool params_off(const Offload& o, Stage stage) {
  return o.params != OffloadDevice::none && sharding(stage).parameters;
}
}  // namespace

bool offload_applies(const Offload& offload, Stage stage) {
  return optimizer_off(offload, stage) || params_off(offload, stage);
}

plan::BytesPerParam gpu_bytes_per_param(const plan::BytesPerParam& bpp, const Offload& offload,
                                        Stage stage) {
  plan::BytesPerParam gpu = bpp;
  if (optimizer_off(offload, stage)) {
    gpu.optimizer = 0;  // with its block constants and size rule
    gpu.block = gpu.block_bytes = gpu.small_optimizer = 0;
    gpu.small_below = 0;
    if (sharding(stage).gradients) gpu.grads = 0;
  }
  if (params_off(offload, stage)) gpu.params = 0;
  return gpu;
}

std::optional<OffloadBytes> offload_bytes(std::uint64_t params, int ranks, Stage stage,
                                          const plan::BytesPerParam& bpp, const Offload& offload) {
  ZERODP_CHECK(ranks >= 1);
  if (!offload_applies(offload, stage)) return std::nullopt;
  const std::uint64_t S = shard_of(params, ranks, 0).capacity;
  OffloadBytes b;
  if (optimizer_off(offload, stage)) {
    const std::uint64_t states = bpp.optimizer_bytes(S), grads32 = 4 * S;
    if (offload.optimizer == OffloadDevice::cpu) {
      b.host_bytes += states + grads32;
    } else {
      b.nvme_bytes += states;
      b.host_bytes += grads32;
    }
    if (stage == Stage::zero3) b.host_bytes += std::uint64_t(bpp.grads) * S;
    b.pcie_to_host_per_step += std::uint64_t(bpp.grads) * S;
    // The updated params go up unless they live on the host too (then the gathers take them).
    if (!params_off(offload, stage)) b.pcie_to_gpu_per_step += std::uint64_t(bpp.params) * S;
  }
  if (params_off(offload, stage)) {
    const std::uint64_t shard = std::uint64_t(bpp.params) * S;
    (offload.params == OffloadDevice::cpu ? b.host_bytes : b.nvme_bytes) += shard;
    b.pcie_to_gpu_per_step += 2 * shard;
    if (!optimizer_off(offload, stage)) b.pcie_to_host_per_step += shard;
  }
  return b;
}

}  // namespace zerodp::deepspeed
