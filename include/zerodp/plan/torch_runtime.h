// What PyTorch keeps where its builds differ, for the activations (catalog/models.h) and the
// optimizer step's temporaries (deepspeed/runtime.h) the planner counts.
//
// Contract: the formulas are written once and take one of these; the planner predicts for
// kCudaTorch2 (what GPUs run, torch 2.1 or later), and tests/plan/torch_reference checks the
// same formulas against the tensors PyTorch itself saves and allocates on this machine's
// build, kCpuTorch113, to the byte. Each difference is a line of PyTorch's own code:
//   mean_keeps_input  torch 1.13's MeanBackward1 saves its input (its node has _saved_self,
//                     as tests/plan/torch_reference sees); 2.x keeps only sizes
//                     (tools/autograd/derivatives.yaml, mean.dim: `mean_backward(grad,
//                     self.sym_sizes(), dim, self.sym_numel(), keepdim)`). Every RMSNorm's
//                     x² (4 bytes an element) is kept under 1.13 and not under 2.x.
//   norm_stat_bytes   LayerNorm's saved mean and rstd: fp32 on CUDA (layer_norm_kernel.cu,
//                     `at::toAccumulateType(input.scalar_type(), /*is_cuda=*/true)`), the
//                     input's dtype on CPU under 1.13.
//   mask_bytes        dropout's kept mask: a bool from CUDA's fused native_dropout
//                     (`dropout_cuda<bool>`), the input dtype from 1.13's CPU path (input *
//                     bernoulli noise).
//   foreach_adamw_copies  fp32 copies of the parameters torch's foreach AdamW allocates at
//                     once: 1.13 and 2.0 make sqrt(v) and then sqrt(v)/c + eps out of place
//                     (two); from 2.1 it divides and adds in place (`torch._foreach_add_(
//                     exp_avg_sq_sqrt, eps)`: one). The single-tensor path makes two in all
//                     (`(exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`).
// The planner's prediction is for torch >= 2.1 on CUDA.
#pragma once

#include <cstdint>

namespace zerodp::plan {

struct TorchRuntime {
  bool mean_keeps_input = false;
  std::uint64_t norm_stat_bytes = 4;
  std::uint64_t mask_bytes = 1;
  std::uint64_t foreach_adamw_copies = 1;
};

inline constexpr TorchRuntime kCudaTorch2{false, 4, 1, 1};
inline constexpr TorchRuntime kCpuTorch113{true, 2, 2, 2};

}  // namespace zerodp::plan
