// What a GPU holds beyond model state and activations when DeepSpeed runs ZeRO: the buffers
// its configuration implies, and an allowance for the CUDA context and the allocator. With
// these the plan's total is the GPU's peak per rank, each term printed so a user sees why.
//
// Contract (DeepSpeed v0.16.4, commit 38327e07f6cd; file:line there), with P, G the bytes of a
// 16-bit param and gradient on the GPU, S = ceil(Φ/N) and the settings' element counts:
//  stage 0   the gradient all-reduce flattens buckets of 500M elements (engine.py:111, a
//            constant, not a config key; :2491): G·min(Φ, 500M) during the backward.
//  stage 1, 2  contiguous_gradients (default true) makes the backward's reduction buffer of
//            reduce_bucket_size elements, a second one with overlap_comm (default false below
//            stage 3) (stage_1_and_2.py:2048-2060): G·reduce_bucket_size·(1 or 2). The updated
//            params are all-gathered in place (allgather_bucket_size sizes nothing then).
//  stage 3   one reduction buffer of reduce_bucket_size elements for the whole run
//            (stage3.py:537-540): G·reduce_bucket_size. The gathered params of the module being
//            computed and those prefetched, during forward and backward: P·min(Φ, K +
//            min(prefetch, max(0, max_live − K))) with K = max(L, R): L the largest layer (the
//            current module is always fetched; stage3_max_live_parameters caps only the
//            prefetch, partitioned_param_coordinator.py:381), R the params a module keeps
//            because it is used again within stage3_max_reuse_distance elements of the trace
//            (:543-551): at the turn from forward to backward, the last modules of the
//            forward, each whose successors hold fewer than half that distance (they are
//            traversed twice before its reuse; catalog::reuse_kept_params()). Tensors of at most
//            stage3_param_persistence_threshold elements stay whole on every GPU
//            (partition_parameters.py:1130): P·their parameters (their shard is model state
//            too). hpZ's secondary partition: P·ceil(Φ/h) (deepspeed/topology.h).
//  stages 2, 3  a parameter's whole gradient, G·L at most, lives in the backward until it is
//            copied into the reduction buffer (stage_1_and_2.py:955-962, stage3.py:1275-1285):
//            G·L. With the optimizer offloaded the gradient shard itself lives on the host
//            (stage3.py:547-551; deepspeed/offload.h).
//  step      the optimizer steps on an fp32 copy of the rank's gradient shard, 4·S (stages
//            1, 2: stage_1_and_2.py:1892; stage 3, per sub-group of at most sub_group_size
//            elements: stage3.py:1896), on the GPU unless the optimizer is offloaded. That copy
//            is made as flatten(averaged_gradients).to(fp32) (stage_1_and_2.py:1892-1897,
//            stage3.py:1896-1897): the 16-bit flat copy, G·S, lives with it for a moment, the
//            16-bit gradient buffer (grads_in_partition, stage_1_and_2.py:1352) staying too.
//            Then the optimizer's own temporaries, on the one flat fp32 tensor it is given:
//            none for DeepSpeed's FusedAdam (ops/adam/fused_adam.py: one fused kernel, in
//            place); 4·S for torch's foreach AdamW, whose exp_avg_sq_sqrt =
//            torch._foreach_sqrt(exp_avg_sqs) is a full copy divided and added to in place
//            (torch/optim/adamw.py, _multi_tensor_adamw, torch >= 2.1; 2.0 made
//            two); 8·S for its single-tensor
//            path, whose denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt) holds the sqrt and the
//            quotient at once (_single_tensor_adamw). The step adds 4·S + max(G·S, temporaries).
//            Stage 0 with fp16 and FusedAdam (FP16_Optimizer, runtime/fp16/fused_optimizer.py:
//            284-291) casts every gradient to fp32 (p.grad.to(fp32), 4·Φ) and flattens the
//            casts into one fp32 gradient (4·Φ) before it frees them, the 16-bit gradients
//            still there: the step adds 8·Φ. With torch's AdamW (FP16_UnfusedOptimizer,
//            engine.py:1549-1579, unfused_optimizer.py:221-225) each fp32 master gets its
//            gradient's fp32 cast, 4·Φ in all, and AdamW steps on those separate tensors: its
//            foreach copy of them all, or the single-tensor path's two of the largest (L).
//            Stage 0 with bf16 runs DeepSpeed's
//            BF16_Optimizer, which partitions the master and the Adam states as ZeRO-1 does
//            and accumulates fp32 gradients whole (bf16_optimizer.py:147-163); it is planned
//            as the seed's DP, which holds more.
//  CUDA      the context, kernels and allocator: --cuda-overhead (kDefaultCudaOverhead).
//  frozen    LoRA and QLoRA (plan/frozen.h): Φ above is the trained parameters, whose
//            gradients fill the buckets and whose shard the step copies; ZeRO-3 partitions the
//            frozen ones too (partition_parameters.py partitions every parameter of the
//            module), so its gathered term counts them, at P bytes an element (an NF4 layer's
//            codes are fewer: an upper bound there), and a whole gradient waiting for its
//            reduction is the largest trained tensor's. A quantized base dequantizes one weight
//            at a time for its product, forward and backward (bitsandbytes' MatMul4Bit), into
//            16 bits: 2 bytes an element of the largest, with the activations.
//
// PyTorch's FSDP with FULL_SHARD instead (Framework::fsdp, the stage-3 row; torch 2.x
// torch/distributed/fsdp/_runtime_utils.py), M the bytes of its sharded params and gradients
// (4 under a MixedPrecision policy, whose shards stay fp32; with --bytes-per-param the
// gradients' bytes given),
// R the params outside the layers (the root unit: embeddings, final norm, head), U the largest
// layer (a unit), L the largest module:
//  grads     made in the backward, M·S in all: the optimizer's zero_grad() frees them after
//            each step, so the activations' peak holds the model state less M·S (deferred).
//  gathered  the root unit's params stay unsharded from the forward into the backward
//            (_post_forward_reshard: `not state._is_root`), with the unit being computed and
//            the one backward_prefetch (BACKWARD_PRE) fetches: P·(R + 2U), whether or not
//            limit_all_gathers is set. The limiter moves no free: _reshard frees the unit's
//            unsharded flat param (handle.reshard) in either case and only records an event
//            for the limiter when it is on; _unshard's one wait, event.synchronize() on the
//            free two units back, is what it adds (torch 2.0 _runtime_utils.py, _unshard and
//            _reshard; the same in 1.13's FullyShardedDataParallel methods). The free is
//            _free_unsharded_flat_param: record_stream(current_stream()), then _free_storage
//            (flat_param.py, 1.13 to 2.x). The caching allocator counts the block out of the
//            allocated bytes at that free and keeps it from reuse until the compute stream
//            has passed the recorded event (c10/cuda/CUDACachingAllocator.cpp, free:
//            insert_events). Without the limiter nothing in FSDP bounds how far the CPU runs
//            ahead in the forward, so such blocks may reach every unit, P·Φ of active and
//            reserved memory (llama-cookbook-25-13b's 48 GiB reserved). They never make an
//            out-of-memory error: before it reports one, malloc calls release_cached_blocks
//            (free_cached_blocks in older versions), whose synchronize_and_free_events waits
//            for those events and returns the blocks, then retries (torch 2.x malloc). The
//            run-ahead costs a device synchronization and cudaMalloc retries, not memory the
//            run needs (the limiter's docstring: "Enabling this can help lower the number of
//            CUDA malloc retries").
//  layer grads  a unit's unsharded gradient before its reduce-scatter, and the head's, held
//            from the first step of the backward until the root unit's last gradient (the
//            embedding's) arrives: G·(U + L).
//  step      the optimizer on the shards themselves: no fp32 copy, no flat copy; torch's
//            foreach AdamW's copy of the whole shard, M·S, the single-tensor path's two of the
//            largest unit's shard, none fused.
//  No reduction bucket: each unit's gradient is reduce-scattered on its own.
//  frozen    LoRA and QLoRA as PEFT wraps them for FSDP (peft's fsdp_auto_wrap_policy: the
//            layers, and each leaf module whose weight trains, so every adapter and saved copy
//            is a unit of its own and no flat parameter mixes frozen and trained tensors): the
//            frozen base is sharded as the other params (its quantization state whole), the
//            gathered term is the frozen root unit and two frozen layers at their own bytes
//            (plan::FrozenUnits; an NF4 layer's codes, in the storage type FSDP flattens) and
//            two of the largest trained units; the layer gradients are one trained unit's (the
//            root trains nothing); the step's copy and the deferred gradients are the trained
//            shards'; a quantized base's dequantized weight lives with the activations.
// Phases: the buffers of the forward and backward live with the activations, the step's terms
// after them, so the peak is  state - deferred + held + max(activations + backward,
// deferred + step)  where "held" is what lives through both (CUDA, hpZ, persistent params,
// stage 3's reduction buffer) and "deferred" the model state made only in the backward
// (FSDP's gradients; none under DeepSpeed).
// Pure; every byte count is exact with 128-bit intermediates and saturates at 2^64 − 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <vector>

#include "zerodp/deepspeed/offload.h"
#include "zerodp/deepspeed/topology.h"
#include "zerodp/plan/frozen.h"
#include "zerodp/plan/memory.h"
#include "zerodp/plan/torch_runtime.h"

namespace zerodp::deepspeed {

// The CUDA context, kernels and allocator: Hugging Face's "Anatomy of Model's Memory"
// (huggingface.co/docs/transformers/model_memory_anatomy) measures 1.34 GB for the context
// and kernels alone on a V100 and gives 1-2 GB; 2 GB is the top of that range, the rest a
// margin for the caching allocator's rounding. It varies with the GPU, CUDA and PyTorch,
// hence a flag.
constexpr std::uint64_t kDefaultCudaOverhead = 2'000'000'000;

// How the optimizer's step is computed, which decides its temporaries (above). DeepSpeed
// builds FusedAdam for an "optimizer" block of type Adam or AdamW, torch.optim.AdamW with
// "torch_adam": true (foreach on CUDA, the single-tensor path with "foreach": false)
// (runtime/engine.py:1415-1440); the Hugging Face Trainer builds torch's AdamW itself when the
// config has no optimizer block.
enum class OptimizerImpl : std::uint8_t { fused, foreach, single };
std::string_view optimizer_impl_name(OptimizerImpl impl);  // "fused", "foreach", "single"
std::optional<OptimizerImpl> optimizer_impl_from_name(std::string_view name);
// The fp32 copies of the flat shard the step allocates at once: 0 fused, 1 foreach under torch
// 2.x (2 under 1.13: plan/torch_runtime.h), 2 single-tensor. tests/plan/torch_reference
// checks them against what torch's AdamW allocates here.
std::uint64_t optimizer_step_copies(OptimizerImpl impl,
                                    const plan::TorchRuntime& runtime = plan::kCudaTorch2);

// zero_optimization's sizes in elements, DeepSpeed's defaults (runtime/zero/config.py).
struct BufferSettings {
  std::uint64_t reduce_bucket_size = 500'000'000;
  std::uint64_t allgather_bucket_size = 500'000'000;  // read; sizes nothing (in-place gather)
  std::optional<bool> overlap_comm;                   // default: stage 3 only
  bool contiguous_gradients = true;
  std::uint64_t prefetch_bucket_size = 50'000'000;
  std::uint64_t param_persistence_threshold = 100'000;
  std::uint64_t max_live_parameters = 1'000'000'000;
  std::uint64_t max_reuse_distance = 1'000'000'000;
  std::uint64_t sub_group_size = 1'000'000'000;
};

// What the model tells the buffers: its largest module and its parameters in tensors of at
// most the persistence threshold (catalog/models.h's small_tensor_params()).
struct RuntimeModel {
  std::uint64_t params = 0;                        // trained (every parameter of a full fine-tune)
  std::uint64_t largest_layer_params = 0;          // trained or not: what ZeRO-3 gathers whole
  std::optional<std::uint64_t> persistent_params;  // nullopt: not known (no model config)
  // Kept gathered at the turn to backward by stage3_max_reuse_distance; nullopt: not known.
  std::optional<std::uint64_t> reuse_kept_params;
  // FSDP's units: the params outside the layers (the root unit) and the largest layer.
  std::uint64_t outside_layer_params = 0, per_layer_params = 0;
  // Beside the trained parameters, the untrained ones (LoRA's base), which ZeRO-3 gathers too.
  std::uint64_t frozen_params = 0;
  // The largest trained tensor, whose whole gradient waits for its reduction; nullopt: the
  // largest layer (a full fine-tune).
  std::optional<std::uint64_t> largest_trained_params;
  // FSDP's units of the frozen base (LoRA's), in bytes.
  plan::FrozenUnits frozen_units;
};

// Whose mechanics make the GPU peak: DeepSpeed's ZeRO, or PyTorch's FSDP (FULL_SHARD, at
// stage 3; the other stages are DeepSpeed's).
enum class Framework : std::uint8_t { deepspeed, fsdp };
std::string_view framework_name(Framework framework);  // "deepspeed", "fsdp"
std::optional<Framework> framework_from_name(std::string_view name);

// Everything besides the stage and N that sizes the terms.
struct RuntimeRun {
  RuntimeModel model;
  plan::BytesPerParam bpp;  // as trained; what stays on the GPU follows from `offload`
  Offload offload;
  bool buffers = false;  // DeepSpeed's buffers counted; false: only the allowance and hpZ
  BufferSettings settings;
  ZeroPlusPlus zeropp;
  std::uint64_t cuda_overhead = 0;
  OptimizerImpl optimizer_impl = OptimizerImpl::fused;
  // Mixed fp16 without ZeRO: DeepSpeed's FP16_Optimizer steps on fp32 gradients it builds
  // (runtime/fp16/fused_optimizer.py:284-291).
  bool fp16_optimizer = false;
  Framework framework = Framework::deepspeed;
  std::uint32_t fsdp_shard_bytes = 4;  // M above: bytes of FSDP's sharded params and grads
  OptimizerImpl fsdp_optimizer_impl = OptimizerImpl::foreach;  // FSDP's row's step
  // FSDP's limit_all_gathers: the same gathered term either way ("gathered" above); kept
  // because the plan reports it.
  bool fsdp_limit_all_gathers = true;
  // An optimizer other than AdamW (the table's rows, zerodp/common/optimizers.h): the fp32
  // copies of the flat shard its own step makes (transformers' Adafactor two), in place of
  // optimizer_impl's AdamW temporaries. nullopt: an AdamW, as optimizer_impl says.
  std::optional<std::uint32_t> row_step_copies = std::nullopt;
  // The frozen base's bytes (plan/frozen.h), model state beside the trained parameters', and a
  // quantized base's largest weight, dequantized to 16 bits for its product (0: none).
  std::vector<plan::FrozenPart> frozen;
  std::uint64_t dequantized_params = 0;
};

struct RuntimeTerms {
  // Through the whole step.
  std::uint64_t cuda_overhead = 0;
  std::uint64_t hpz_secondary = 0;
  std::uint64_t persistent_params = 0;
  std::uint64_t reduce_buffer_held = 0;  // stage 3's, for the whole run
  // With the activations, during forward and backward.
  std::uint64_t reduce_buffers = 0;  // stages 0-2
  std::uint64_t gathered_params = 0;
  std::uint64_t layer_grads = 0;  // stages 2, 3: a module's whole gradient before its reduction
  std::uint64_t dequantized_weight = 0;  // a quantized base's weight in 16 bits, for its product
  // During the optimizer step.
  std::uint64_t step_fp32_grads = 0;
  std::uint64_t step_flat_grads = 0;        // flatten()'s 16-bit copy, beside the fp32 one
  std::uint64_t optimizer_temporaries = 0;  // the optimizer's own, after it
  // Model state that exists only from the backward on (FSDP's gradients): not with the
  // activations' peak, back for the step.
  std::uint64_t deferred_grads = 0;

  std::uint64_t held() const;
  std::uint64_t backward() const;
  // The step's terms: the fp32 gradients and the larger of the flat copy and the temporaries.
  std::uint64_t step() const;
  // Whether the optimizer step, rather than the backward with its activations, sets the peak.
  bool step_sets_peak(std::uint64_t activation_bytes) const;
  // Model state + these + activations at their phases: the GPU's peak,
  //   state - deferred + held + max(activations + backward, deferred + step).
  std::uint64_t peak(std::uint64_t model_state_bytes, std::uint64_t activation_bytes) const;
};

// The terms at `stage` on N = `ranks` GPUs (hpZ's secondary partition counts even without
// buffers: it is model state ZeRO++ adds).
RuntimeTerms runtime_terms(Stage stage, int ranks, const RuntimeRun& run);

// The model state on the GPU at `stage` over N = `ranks`: the trained parameters' (what the
// offload leaves) and the frozen base's.
std::uint64_t gpu_state_bytes(Stage stage, int ranks, const RuntimeRun& run);

// The least N at which the peak (model state on the GPU included) fits `gpu_memory`, rounded
// up to a multiple of `round_to`; nullopt when none does. The peak never grows with N, so this
// is exact: the result fits and one fewer (before rounding) does not.
std::optional<std::uint64_t> min_gpus_for_peak(Stage stage, const RuntimeRun& run,
                                               std::uint64_t activation_bytes,
                                               std::uint64_t gpu_memory, std::uint64_t round_to);

}  // namespace zerodp::deepspeed
