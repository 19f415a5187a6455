// plan_notes(): the sentences under the table, each the plain answer to one cell.
#include <cstdio>
#include <string>

#include "zerodp/plan_report.h"
#include "zerodp/units.h"

namespace zerodp::plan {
namespace {

std::string ratio(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

std::string least_n_list(const PlanReport& report) {
  std::string list;
  for (const StageReport& s : report.stages) {
    if (!list.empty()) list += ", ";
    list += std::string(stage_name(s.stage)) + " " +
            (s.min_gpus ? std::to_string(*s.min_gpus) : std::string("none"));
  }
  return list;
}

std::string bytes(std::uint64_t b, bool binary) {
  return units::format_bytes(b, binary);
}

// Cell B: one GPU.
std::string one_gpu_note(const PlanReport& report, bool binary) {
  return "At N = 1 every stage holds the same " +
         bytes(*report.stages[0].model_state_bytes, binary) + " (" +
         std::to_string(report.inputs.bpp.total()) +
         " bytes x params): ZeRO only partitions the model state, so it saves nothing without "
         "N > 1.";
}

// Cell D: activations dominate.
std::string activations_note(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const StageReport& dp = report.stages[0];
  const StageReport& z3 = report.stages[3];
  std::string note = "Activations (" + bytes(in.activation_bytes, binary) +
                     ") dominate the model state (" + bytes(*dp.floor_bytes, binary) + " under DP)";
  if (z3.savings_vs_dp && report.comm_ratio_ring) {
    note += ": at N = " + std::to_string(*in.gpus) + " ZeRO-3 saves only " +
            units::format_percent(*z3.savings_vs_dp) + " of the memory while sending " +
            ratio(*report.comm_ratio_ring) + "x DP's bytes on a ring (" +
            ratio(*report.comm_ratio_seed) + "x by the seed's count)";
  }
  return note +
         ". ZeRO is not worth it here; reach for activation checkpointing or gradient "
         "accumulation instead.";
}

// Cells E and H: what fits the budget.
std::string fit_note(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const std::string budget = bytes(*report.budget, binary);
  const std::string rounded = in.round_to && *in.round_to > 1
                                  ? ", rounded up to a multiple of " + std::to_string(*in.round_to)
                                  : std::string();
  const std::string least = "Least N per stage (model-state budget " + budget + " per GPU" +
                            rounded + "; none: the floor exceeds it): " + least_n_list(report) +
                            ".";
  if (!in.gpus) return least;
  if (!report.cheapest_fitting_stage) {
    return "No stage fits at N = " + std::to_string(*in.gpus) + ". " + least;
  }
  const StageReport& s = report.stages[*report.cheapest_fitting_stage];
  return "Cheapest stage that fits at N = " + std::to_string(*in.gpus) + ": " +
         std::string(stage_name(s.stage)) + " (model state " + bytes(*s.model_state_bytes, binary) +
         " <= budget " + budget + ").";
}

}  // namespace

std::vector<std::string> plan_notes(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  std::vector<std::string> notes;
  if (in.params && in.gpus && *in.gpus == 1) notes.push_back(one_gpu_note(report, binary));
  if (report.activations_dominate.value_or(false)) {
    notes.push_back(activations_note(report, binary));
  }
  if (report.budget && in.params) notes.push_back(fit_note(report, binary));
  // The stage the DeepSpeed config asks for, at N.
  if (in.configured_stage && report.budget && in.params && in.gpus) {
    const StageReport& s = report.stages[stage_number(*in.configured_stage)];
    notes.push_back("The DeepSpeed config's stage, " + std::string(stage_name(s.stage)) +
                    (*s.fits ? ", fits" : ", does not fit") +
                    " at N = " + std::to_string(*in.gpus) + ": model state " +
                    bytes(*s.model_state_bytes, binary) + (*s.fits ? " <= " : " > ") + "budget " +
                    bytes(*report.budget, binary) + ".");
  }
  // Cell F: the price of ZeRO-3 in communication (already said when activations dominate).
  if (report.comm_ratio_seed && !report.activations_dominate.value_or(false)) {
    notes.push_back("ZeRO-3 sends " + ratio(*report.comm_ratio_seed) +
                    "x DP's bytes by the seed's count and " + ratio(*report.comm_ratio_ring) +
                    "x on a ring.");
  }
  return notes;
}

}  // namespace zerodp::plan
