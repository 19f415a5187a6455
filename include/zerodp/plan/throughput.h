// Training throughput bound by compute: a token's products (catalog::training_flops) at the
// fraction of a card's dense rate (catalog::gpu_rates) its runs reach.
//
// Contract:
//   tokens/s a GPU = hfu × dense rate / hardware FLOPs a token
//   MFU            = tokens/s a GPU × model FLOPs a token / dense rate
// hfu, the hardware FLOPs utilisation, counts what checkpointing recomputes, so one value serves
// runs with and without it; MFU counts the model's FLOPs alone, as published tables do. Neither
// counts communication a run does not hide. Inputs must be finite and positive (ZERODP_CHECK).
// Pure.
#pragma once

namespace zerodp::plan {

double compute_tokens_per_second(double hardware_flops_per_token, double dense_flops, double hfu);
double model_flops_utilisation(double tokens_per_second, double model_flops_per_token,
                               double dense_flops);

}  // namespace zerodp::plan
