// What makes up each stage's memory per GPU at N: the peak's terms, named as the notes name
// them, and the same as a stacked bar chart against the GPU's memory.
//
// Contract:
//  - peak_terms_of() lists, for one stage of a report with N, the terms whose sum is the
//    stage's total at N (StageReport::total_bytes) exactly: with the GPU peak's terms counted
//    (a model, a DeepSpeed config), those of the phase that sets the peak (backward: model
//    state, activations, buffers ...; or the optimizer step), as the notes print them; without
//    them, the model state split into the seed's three blocks (16-bit params, gradients,
//    optimizer states; one "model state" term when offload moved part of it) and the
//    activations. Terms of zero bytes are left out. Empty when the stage has no total at N.
//  - peak_breakdown_svg() draws one stacked bar per stage from those terms, each bar labelled
//    with its total, and a dashed line at the GPU memory when one is given; a complete SVG 1.1
//    document like memory_figure_svg() (plan/figure.h). Pure. Requires report.inputs.gpus.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerodp/report/report.h"

namespace zerodp::report {

struct PeakTerm {
  std::string name;  // "model state", "activations", "CUDA", "reduce buffers" ...
  std::uint64_t bytes = 0;
};

// The terms of stage s's total at N, and which phase they are of ("backward" or "optimizer
// step" with runtime terms; "" without).
struct PeakBreakdown {
  std::vector<PeakTerm> terms;
  std::string phase;
};
PeakBreakdown peak_terms_of(const PlanReport& report, const StageReport& s);

std::string peak_breakdown_svg(const PlanReport& report, bool binary = false);

}  // namespace zerodp::report
