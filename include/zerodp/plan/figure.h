// The seed's figure: model-state memory per GPU of DP, ZeRO-1, ZeRO-2 and ZeRO-3 against the
// number of GPUs N, with each stage's floor (N → ∞) as a dashed line.
//
// Contract: memory_figure_svg() returns a complete, standalone SVG 1.1 document (UTF-8) that
// browsers render as is: a title, the four curves sampled at integer N from 1 to max_gpus
// from model_state_bytes() (so the figure and the table agree), the floors of stages 1-3
// dashed and labelled (the DP curve is its own floor), axes labelled with their units, ticks
// and a legend. The y axis starts at 0 and is linear; the N axis is logarithmic (base 2
// ticks) or linear. Pure: the caller writes the file. Preconditions: params accepted by
// check_fits_in_64_bits(), 2 <= max_gpus <= kMaxFigureGpus.
#pragma once

#include <cstdint>
#include <string>

#include "zerodp/plan/memory.h"

namespace zerodp::plan {

inline constexpr int kMaxFigureGpus = 1 << 20;

struct FigureOptions {
  std::uint64_t params = 0;  // Φ
  BytesPerParam bpp;
  std::string bpp_source = "mixed fp16, Adam";  // shown in the subtitle
  int max_gpus = 64;
  bool log_x = true;    // base-2 ticks; linear when false
  bool binary = false;  // GiB instead of GB on the y axis
};

std::string memory_figure_svg(const FigureOptions& options);

}  // namespace zerodp::plan
