#include "zerodp/deepspeed/runtime.h"

#include <algorithm>
#include <utility>

#include "zerodp/common/error.h"
#include "zerodp/common/saturating.h"

namespace zerodp::deepspeed {
namespace {

using u128 = unsigned __int128;
// DeepSpeed's gradient all-reduce without ZeRO flattens buckets of this many elements
// (engine.py:111, MEMORY_OPT_ALLREDUCE_SIZE).
constexpr std::uint64_t kStageZeroBucket = 500'000'000;

// The optimizer's own temporaries on `elements` of `bytes` each, held in tensors of at most
// `largest` elements: fused none, foreach its copies of them all at once, single its two of
// one tensor at a time.
u128 adamw_temporaries(OptimizerImpl impl, u128 bytes, u128 elements, u128 largest) {
  return bytes * optimizer_step_copies(impl) * (impl == OptimizerImpl::single ? largest : elements);
}

// FSDP FULL_SHARD's terms (runtime.h).
RuntimeTerms fsdp_terms_at(u128 ranks, const RuntimeRun& run) {
  const RuntimeModel& m = run.model;
  const u128 p = run.bpp.params, g = run.bpp.grads, phi = m.params;
  const u128 shard = (phi + ranks - 1) / ranks, M = run.fsdp_shard_bytes;
  // A frozen base (LoRA) leaves the trained params in units of their own, one tensor each; the
  // root trains nothing.
  const bool frozen = !run.frozen.empty();
  const u128 unit = frozen ? m.largest_trained_params.value_or(0) : m.per_layer_params;
  const u128 root = frozen ? 0 : m.outside_layer_params;
  RuntimeTerms t;
  t.cuda_overhead = run.cuda_overhead;
  t.dequantized_weight = saturated(2 * u128(run.dequantized_params));
  if (!run.buffers) return t;
  t.deferred_grads = saturated(M * shard);
  // limit_all_gathers changes when the CPU waits, not what is allocated (runtime.h).
  t.gathered_params =
      saturated(p * std::min<u128>(phi, root + 2 * unit) + u128(m.frozen_units.root_bytes) +
                2 * u128(m.frozen_units.layer_bytes));
  t.layer_grads = saturated(g * std::min<u128>(phi, frozen ? unit : unit + m.largest_layer_params));
  t.optimizer_temporaries =
      run.row_step_copies
          ? saturated(M * *run.row_step_copies * shard)
          : saturated(adamw_temporaries(run.fsdp_optimizer_impl, M, shard,
                                        (std::max(unit, root) + ranks - 1) / ranks));
  return t;
}

// The terms at any N >= 1 (wider than int: the least-N search probes beyond it).
RuntimeTerms terms_at(Stage stage, u128 ranks, const RuntimeRun& run) {
  if (run.framework == Framework::fsdp && stage == Stage::zero3) return fsdp_terms_at(ranks, run);
  const RuntimeModel& m = run.model;
  const plan::BytesPerParam& bpp = run.bpp;
  const Offload& offload = run.offload;
  const BufferSettings& b = run.settings;
  RuntimeTerms t;
  t.cuda_overhead = run.cuda_overhead;
  // hpZ's secondary partition sits where the params do: off the GPU when they are offloaded.
  if (!(stage == Stage::zero3 && offload.params != OffloadDevice::none)) {
    t.hpz_secondary = hpz_secondary_bytes(stage, m.params, bpp, run.zeropp);
  }
  t.dequantized_weight = saturated(2 * u128(run.dequantized_params));
  if (!run.buffers) return t;
  const u128 p = bpp.params, g = bpp.grads, phi = m.params;
  const u128 everything = phi + m.frozen_params;  // what ZeRO-3 gathers
  const u128 largest_trained = m.largest_trained_params.value_or(m.largest_layer_params);
  switch (stage) {
    case Stage::dp:
      t.reduce_buffers = saturated(g * std::min<u128>(phi, kStageZeroBucket));
      break;
    case Stage::zero1:
    case Stage::zero2:
      if (b.contiguous_gradients) {
        t.reduce_buffers =
            saturated(g * b.reduce_bucket_size * (b.overlap_comm.value_or(false) ? 2 : 1));
      }
      break;
    case Stage::zero3: {
      if (b.contiguous_gradients) t.reduce_buffer_held = saturated(g * b.reduce_bucket_size);
      const u128 kept = std::max(m.largest_layer_params, m.reuse_kept_params.value_or(0));
      const u128 room = b.max_live_parameters > kept ? b.max_live_parameters - kept : 0;
      const u128 live =
          std::min<u128>(everything, kept + std::min<u128>(b.prefetch_bucket_size, room));
      t.gathered_params = saturated(p * live);
      t.persistent_params = saturated(p * m.persistent_params.value_or(0));
      break;
    }
  }
  // Gradients sharded: a parameter's whole gradient waits for its reduction.
  if (stage == Stage::zero2 || stage == Stage::zero3) {
    t.layer_grads = saturated(g * largest_trained);
  }
  if (stage == Stage::dp && run.fp16_optimizer) {
    t.step_fp32_grads = saturated(4 * phi);
    // FP16_Optimizer (FusedAdam) flattens the fp32 casts; FP16_UnfusedOptimizer (torch's
    // AdamW) steps on them as separate tensors.
    if (run.optimizer_impl == OptimizerImpl::fused) t.step_flat_grads = saturated(4 * phi);
    t.optimizer_temporaries =
        run.row_step_copies
            ? saturated(u128(4) * *run.row_step_copies * phi)
            : saturated(adamw_temporaries(run.optimizer_impl, 4, phi, m.largest_layer_params));
  }
  if (stage != Stage::dp && offload.optimizer == OffloadDevice::none) {
    u128 shard = (phi + ranks - 1) / ranks;
    if (stage == Stage::zero3) shard = std::min<u128>(shard, b.sub_group_size);
    t.step_fp32_grads = saturated(4 * shard);
    t.step_flat_grads = saturated(g * shard);
    t.optimizer_temporaries =  // one flat tensor
        run.row_step_copies ? saturated(u128(4) * *run.row_step_copies * shard)
                            : saturated(adamw_temporaries(run.optimizer_impl, 4, shard, shard));
  }
  return t;
}

u128 step_wide(const RuntimeTerms& t) {
  return u128(t.step_fp32_grads) + std::max(t.step_flat_grads, t.optimizer_temporaries);
}

u128 peak_wide(const RuntimeTerms& t, u128 state, u128 activations) {
  const u128 backward = activations + t.backward();
  const u128 deferred = std::min<u128>(t.deferred_grads, state);
  return state - deferred + t.held() + std::max<u128>(backward, deferred + step_wide(t));
}

}  // namespace

std::uint64_t RuntimeTerms::held() const {
  return saturated(u128(cuda_overhead) + hpz_secondary + persistent_params + reduce_buffer_held);
}

std::uint64_t RuntimeTerms::backward() const {
  return saturated(u128(reduce_buffers) + gathered_params + layer_grads + dequantized_weight);
}

std::uint64_t RuntimeTerms::peak(std::uint64_t model_state_bytes,
                                 std::uint64_t activation_bytes) const {
  return saturated(peak_wide(*this, model_state_bytes, activation_bytes));
}

std::uint64_t RuntimeTerms::step() const {
  return saturated(step_wide(*this));
}

bool RuntimeTerms::step_sets_peak(std::uint64_t activation_bytes) const {
  return u128(deferred_grads) + step_wide(*this) > u128(activation_bytes) + backward();
}

std::string_view framework_name(Framework framework) {
  return framework == Framework::fsdp ? "fsdp" : "deepspeed";
}

std::optional<Framework> framework_from_name(std::string_view name) {
  for (const Framework f : {Framework::deepspeed, Framework::fsdp}) {
    if (name == framework_name(f)) return f;
  }
  return std::nullopt;
}

std::uint64_t optimizer_step_copies(OptimizerImpl impl, const plan::TorchRuntime& runtime) {
  switch (impl) {
    case OptimizerImpl::fused:
      return 0;
    case OptimizerImpl::foreach:
      return runtime.foreach_adamw_copies;
    case OptimizerImpl::single:
      return 2;
  }
  return 0;
}

std::string_view optimizer_impl_name(OptimizerImpl impl) {
  switch (impl) {
    case OptimizerImpl::fused:
      return "fused";
    case OptimizerImpl::foreach:
      return "foreach";
    case OptimizerImpl::single:
      return "single";
  }
  return "fused";
}

std::optional<OptimizerImpl> optimizer_impl_from_name(std::string_view name) {
  for (const OptimizerImpl impl :
       {OptimizerImpl::fused, OptimizerImpl::foreach, OptimizerImpl::single}) {
    if (name == optimizer_impl_name(impl)) return impl;
  }
  return std::nullopt;
}

std::uint64_t gpu_state_bytes(Stage stage, int ranks, const RuntimeRun& run) {
  ZERODP_CHECK(ranks >= 1);
  const plan::BytesPerParam gpu = gpu_bytes_per_param(run.bpp, run.offload, stage);
  const u128 n = static_cast<unsigned>(ranks), phi = run.model.params;
  return saturated(plan::state_bytes_at_shard(phi, (phi + n - 1) / n, stage, gpu) +
                   plan::frozen_bytes_wide(run.frozen, n, stage));
}

RuntimeTerms runtime_terms(Stage stage, int ranks, const RuntimeRun& run) {
  ZERODP_CHECK(ranks >= 1);
  return terms_at(stage, static_cast<u128>(ranks), run);
}

std::optional<std::uint64_t> min_gpus_for_peak(Stage stage, const RuntimeRun& run,
                                               std::uint64_t activation_bytes,
                                               std::uint64_t gpu_memory, std::uint64_t round_to) {
  ZERODP_CHECK(round_to >= 1);
  const plan::BytesPerParam gpu = gpu_bytes_per_param(run.bpp, run.offload, stage);
  const u128 phi = run.model.params;
  auto fits_at = [&](u128 n) {
    const u128 state = plan::state_bytes_at_shard(phi, (phi + n - 1) / n, stage, gpu) +
                       plan::frozen_bytes_wide(run.frozen, n, stage);
    const RuntimeTerms t = terms_at(stage, n, run);
    return peak_wide(t, state, activation_bytes) <= gpu_memory;
  };
  // Beyond N = Φ every shard is one element (or none) and nothing shrinks further. A sharded
  // 8-bit K holds more bytes an element once its shard falls under the size rule: the peak
  // falls with N on each side of that point, not across it, so the least N is looked for
  // where the shard is at least the rule's size, then beyond.
  // Beyond the largest sharded part's elements every shard is one element or none.
  u128 last = std::max<u128>(phi, 1);
  for (const plan::FrozenPart& part : run.frozen) last = std::max<u128>(last, part.elements);
  const u128 rule = gpu.small_below;
  const u128 split =  // the largest N whose shard is at least `rule` elements
      rule > 1 && sharding(stage).optimizer_states
          ? std::min((phi + rule - 2) / (rule - 1), last + 1) - 1
          : last;
  for (const auto& [first, end] :
       {std::pair<u128, u128>{1, split}, std::pair<u128, u128>{split + 1, last}}) {
    if (first > end || !fits_at(end)) continue;
    u128 lo = first, hi = end;  // find the least n in [lo, hi] that fits; hi does
    while (lo < hi) {
      const u128 mid = lo + (hi - lo) / 2;
      if (fits_at(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    const u128 rounded = (lo + round_to - 1) / round_to * round_to;
    if (rounded > kSaturated) return std::nullopt;
    // Rounded up to a node, the shard may fall under the rule: then beyond is looked at.
    if (rounded <= end || fits_at(rounded)) return static_cast<std::uint64_t>(rounded);
  }
  return std::nullopt;
}

}  // namespace zerodp::deepspeed
