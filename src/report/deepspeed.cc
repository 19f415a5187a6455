// The plan beside DeepSpeed's own estimate (`zerodp plan --estimator deepspeed`): DeepSpeed's
// text and rows (deepspeed/estimator.h), with zerodp's figures and each difference named.
#include <nlohmann/json.hpp>

#include "zerodp/common/json_utf8.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/estimator.h"
#include "zerodp/plan/memory.h"
#include "zerodp/report/deepspeed.h"
#include "zerodp/report/json.h"

namespace zerodp::report {
namespace {

nlohmann::ordered_json deepspeed_json(const DeepSpeedEstimate& ds) {
  nlohmann::ordered_json j;
  j["version"] = "DeepSpeed v0.16.4, estimate_zero2/3_model_states_mem_needs_all_cold";
  j["gpus_per_node"] = ds.gpus_per_node;
  j["nodes"] = ds.nodes;
  j["largest_layer_params"] = ds.largest_layer;
  j["zero2"] = nlohmann::ordered_json::array();
  for (const deepspeed::DeepSpeedRow& r :
       deepspeed::deepspeed_zero2_cold(ds.params, ds.gpus_per_node, ds.nodes)) {
    j["zero2"].push_back({{"offload_optimizer", r.offload_optimizer},
                          {"cpu_bytes", r.cpu_bytes},
                          {"gpu_bytes", r.gpu_bytes}});
  }
  j["zero3"] = nlohmann::ordered_json::array();
  for (const deepspeed::DeepSpeedRow& r :
       deepspeed::deepspeed_zero3_cold(ds.params, ds.largest_layer, ds.gpus_per_node, ds.nodes)) {
    j["zero3"].push_back({{"offload_optimizer", r.offload_optimizer},
                          {"offload_params", r.offload_param},
                          {"zero_init", *r.zero_init},
                          {"cpu_bytes", r.cpu_bytes},
                          {"gpu_bytes", r.gpu_bytes}});
  }
  return j;
}

}  // namespace

std::string deepspeed_comparison(const DeepSpeedEstimate& ds, const PlanReport& report,
                                 const FieldNamer& name) {
  std::string out =
      "\nDeepSpeed's estimate, as DeepSpeed v0.16.4 prints it "
      "(estimate_zero2/3_model_states_mem_needs_all_cold):\n\n";
  out += deepspeed::deepspeed_zero2_text(ds.params, ds.gpus_per_node, ds.nodes);
  out += "\n";
  out += deepspeed::deepspeed_zero3_text(ds.params, ds.largest_layer, ds.gpus_per_node, ds.nodes);
  const auto gb = [](std::uint64_t b) { return units::format_bytes(b); };
  // zerodp's model state on DeepSpeed's GPUs with nothing offloaded, whatever the plan offloads:
  // the figures DeepSpeed's offload_optimizer=none rows stand beside.
  const int gpus = ds.gpus_per_node * ds.nodes;
  const auto state = [&](Stage stage) {
    return plan::model_state_bytes(ds.params, gpus, stage, report.inputs.bpp);
  };
  out += "\nzerodp for the same model on " + std::to_string(gpus) +
         " GPUs, without offload: ZeRO-2 " + gb(state(Stage::zero2)) + ", ZeRO-3 " +
         gb(state(Stage::zero3)) +
         " of model state per GPU (GB = 1e9 bytes; DeepSpeed's GB "
         "is 2^30). Where the figures differ:\n";
  out +=
      "  - bytes per parameter: DeepSpeed's sharded part is 18 (16-bit and fp32 gradients, "
      "2 + 4; fp32 master, 4; Adam's m and v, 8: its code's comment) beside the 16-bit params "
      "(2); zerodp counts " +
      std::to_string(report.inputs.bpp.total()) + " (" + report.inputs.bpp_source + ": " +
      plan::bytes_per_param_words(report.inputs.bpp) +
      "), the seed's convention, with no fp32 copy of the gradients;\n";
  out += "  - ZeRO-3: DeepSpeed adds 4 x the largest layer (" +
         units::format_count(ds.largest_layer) +
         " params) for a layer gathered whole; zerodp's model state has no such term (its "
         "engine's gathered units are in `train --dry-run`'s peak);\n";
  out +=
      "  - neither side counts activations or buffers here: DeepSpeed's cold estimate is "
      "model states only; zerodp adds activations with " +
      field_ref("activations") + " or " + field_ref("seq_len") + ".\n";
  return name_fields(out, name);
}

std::string plan_json(const PlanReport& report, const DeepSpeedEstimate& estimate,
                      const FieldNamer& name) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(plan_json(report, name));
  j["deepspeed"] = deepspeed_json(estimate);
  return utf8_dump(std::move(j), 2);
}

}  // namespace zerodp::report
