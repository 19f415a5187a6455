// GPUs by name: the memory each one reports to CUDA (or ROCm), which is what a training run can
// fill, not the capacity it is sold by.
//
// A card sold as "40 GB" holds 40 GiB of HBM (nvidia-smi: 40960 MiB) and reports a little less
// to CUDA; the planner's `--gpu-memory 40GB` is 40 * 10^9 bytes, 7 % less again. So a plan for
// "40GB" can refuse a model that fits the card. A GpuSpec gives the figure PyTorch prints as
// the device's "total capacity" in an out-of-memory message (cudaDeviceProp::totalGlobalMem,
// torch.cuda.get_device_properties().total_memory), with the public report it comes from.
//
// Contract:
//  - reported_bytes is the smallest total a cited report on Linux gives for that card (it
//    varies with the driver and ECC by up to 0.5 %): a plan that fits in it fits every report
//    found. PyTorch prints GiB with two decimals, so a figure taken from such a message is
//    exact to ±0.005 GiB (±5.4 MB), far inside the CUDA context allowance the planner adds.
//  - Every entry names its source (a public thread quoting the figure with the card named);
//    a card without one is not in the table, and docs/planner.md lists those left out.
//  - One exception, said in its reported_as: no public report of the CUDA total names an H200,
//    so its figure is nvidia-smi's total (NVML's, in MiB), which is more than CUDA reports (on
//    an H100 by 0.54 GiB, 0.7 %): a plan for "h200" within 1 % of the GPU memory may not fit.
//  - find_gpu() matches a name as catalog/names.h compares names ("A100-80GB", "a100_80gb");
//    suggest_gpu() gives the name a mistyped or partial one most likely means, for a message.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::catalog {

struct GpuSpec {
  std::string_view name;         // --gpu's word: "a100-40gb"
  std::string_view device;       // as the vendor names it: "NVIDIA A100-SXM4-40GB"
  unsigned sold_gb;              // the "GB" it is sold by: 40
  std::string_view sold_as;      // "40 GB HBM2"
  std::uint64_t reported_bytes;  // what CUDA / ROCm reports: the plan's GPU memory
  std::string_view reported_as;  // the report's own words: "39.39 GiB (42,298,834,944 bytes)"
  std::string_view source;       // where the report is: a URL
};

std::span<const GpuSpec> gpu_catalogue();

// The card of that name, or nullptr.
const GpuSpec* find_gpu(std::string_view name);

// The catalogue's name `name` most likely means, for "did you mean" (catalog/names.h: the name
// it begins, the one card whose model number it is, "a6000" -> "rtx-a6000", or one within two
// edits); empty when none is.
std::string suggest_gpu(std::string_view name);

// A card's peak dense tensor rate for training's products, as its vendor publishes it: bf16
// inputs with fp32 accumulation (fp16 on the V100 and the T4, which have no bf16), without 2:4
// sparsity (a figure given "with sparsity" is halved), at the boost clock. It is what MFU
// divides by; a run reaches a fraction of it. GeForce cards (RTX 3090, 4090) accumulate in fp32
// at half their fp16-accumulate rate: the fp32-accumulate figure is the one training gets.
// Contract: every entry names a card of gpu_catalogue() and quotes the vendor's figure (dense, or
// twice it when `sparse_quoted`); a card whose vendor figure was not found (the A10G, whose
// vendor publishes no datasheet; the A800 and the RTX 6000 Ada, whose datasheets' wording was
// not read) has none.
struct GpuRate {
  std::string_view gpu;     // the catalogue's name
  double dense_flops;       // FLOP/s
  bool sparse_quoted;       // the vendor's figure counts sparsity: dense_flops is half of it
  std::string_view quoted;  // the vendor's words
  std::string_view source;  // the vendor's datasheet, whitepaper or documentation
};
std::span<const GpuRate> gpu_rates();
// The card's rate, or nullptr.
const GpuRate* gpu_rate(std::string_view gpu_name);

// The fraction of a card's dense rate that published training runs' products reached: their
// hardware FLOPs utilisation (HFU, recomputation counted), the median over every bf16 row of
// llm-foundry's benchmark tables (MPT 125M to 70B, Composer FSDP, flash attention, no compile) on
// that generation of card, apart for runs with full activation checkpointing and without: 49 and
// 90 runs on A100s, 29 and 41 on H100s (runs that recompute reach more: larger batches, and the
// recomputed forward counts as work). None for other cards (no such runs).
struct TrainingEfficiency {
  double hfu;
  std::string_view origin;  // which runs, for a person
};
std::optional<TrainingEfficiency> published_efficiency(std::string_view gpu_name,
                                                       bool full_checkpointing);

// The cards sold as `bytes` read as a whole number of decimal GB or of GiB (40 * 10^9 or 40 *
// 2^30: "A100 40GB"): a --gpu-memory of "40GB" names a card's capacity in the unit it is sold
// by, not the bytes it reports. Empty when none is.
std::vector<const GpuSpec*> cards_sold_as(std::uint64_t bytes);

}  // namespace zerodp::catalog
