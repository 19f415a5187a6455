// What would fit when the plan as asked does not: the searches make_plan() runs last, each
// planning the question again with one thing changed (report.cc calls them; nothing else does).
//
// Contract: every count and stage they record has the verdict `fits` when planned again as they
// say (tests/report/answer_agreement_test.cc); they fill only PlanReport's fields of what would
// fit (fitting_changes, offload_changes, offload_tried, optimizer_changes, fewest_gpus,
// fewer_gpus_with, without_offload, dp_fits_with_activations_cut); each nested plan asks no further (its
// seek_* switches off), so the search ends.
#pragma once

#include "zerodp/report/report.h"

namespace zerodp::report {

// At N: the activation changes and the other offloads that fit, and cell D's question (does DP
// fit once the activations are cut?). Without N: the fewest GPUs, as planned and with the
// changes that need fewer. Where the host cannot hold the offload: the fewest GPUs without it.
// With or without N: the memory-efficient optimizers that fit, or need fewer GPUs.
void find_what_would_fit(PlanReport& report);

}  // namespace zerodp::report
