// The plan for tools: its JSON text.
//
// Contract: plan_json() is a contract other tools read; see docs/planner.md. Keys are added,
// never renamed or removed. Its keys: "inputs", "model" (with --model or --model-config:
// "name", "source", "model_type", "params", "active_params", "largest_layer_params",
// "embedding_params", "per_layer_params"; else null), "bytes_per_param", "activation_bytes",
// "budget_bytes", "stages" (four objects with "stage", "name", "model_state_bytes" (on the
// GPU), "total_bytes", "floor_bytes", "savings_vs_dp", "fits", "min_gpus", "max_params",
// "comm_bytes_per_gpu" {"seed", "ring"}, "comm_seconds", "exposed_seconds", "efficiency",
// "offload": null or {"host_bytes_per_gpu", "host_bytes_per_node", "nvme_bytes_per_gpu",
// "nvme_bytes_per_node", "pcie_to_host_bytes_per_step", "pcie_to_gpu_bytes_per_step"}),
// "cheapest_fitting_stage", "tight_stage", "comm_ratio_zero3_to_dp" {"seed", "ring"},
// "activations_dominate", "notes". Bytes, seconds and fractions are plain numbers; null where the
// inputs do not determine a value. Pure.
#pragma once

#include <string>
#include "zerodp/common/error.h"
#include "zerodp/report/report.h"

namespace zerodp::report {

// The JSON text of the plan (keys above), indented by two spaces; the notes name inputs by
// `name`.
std::string plan_json(const PlanReport& report, const FieldNamer& name = field_name);

}  // namespace zerodp::report
