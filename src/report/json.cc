// plan_json(): the machine-readable plan. Keys are a contract (json.h, docs/planner.md):
// add keys freely, never rename or remove one.
#include "zerodp/report/json.h"
#include "zerodp/common/json_utf8.h"
#include "zerodp/report/answer.h"
#include "zerodp/report/notes.h"

#include <nlohmann/json.hpp>

namespace zerodp::report {
namespace {

using json = nlohmann::ordered_json;

template <typename T>
json or_null(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

const char* convention_name(const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  for (const StageReport& s : report.stages) {
    if (s.step) return "step_model";
  }
  if (!in.compute_seconds || !in.bandwidth) return nullptr;
  if (in.comm_bytes) return "given";
  return in.time_convention == CommConvention::seed ? "seed" : "ring";
}

json stage_json(const StageReport& s, const PlanInputs& in) {
  json j;
  j["stage"] = stage_number(s.stage);
  j["name"] = std::string(stage_name(s.stage));
  j["model_state_bytes"] = or_null(s.model_state_bytes);
  // Of which the frozen base of a LoRA or QLoRA run (null for a full fine-tune).
  j["frozen_bytes"] = in.lora && in.gpus && s.model_state_bytes
                          ? json(plan::frozen_bytes(in.frozen, *in.gpus, s.stage))
                          : json(nullptr);
  j["total_bytes"] = or_null(s.total_bytes);
  j["floor_bytes"] = or_null(s.floor_bytes);
  j["savings_vs_dp"] = or_null(s.savings_vs_dp);
  j["fits"] = or_null(s.fits);
  j["verdict"] = s.verdict ? json(std::string(verdict_name(*s.verdict))) : json(nullptr);
  j["host_bytes_per_node"] = or_null(s.host_bytes_per_node);
  j["host_fits"] = or_null(s.host_fits);
  j["min_gpus"] = or_null(s.min_gpus);
  j["max_params"] = or_null(s.max_params);
  j["comm_bytes_per_gpu"] = {{"seed", or_null(s.comm_seed)}, {"ring", or_null(s.comm_ring)}};
  j["comm_seconds"] = s.time ? json(s.time->comm_seconds) : json(nullptr);
  j["hidden_seconds"] = s.time ? json(s.time->hidden_seconds) : json(nullptr);
  j["exposed_seconds"] = s.time ? json(s.time->exposed_seconds) : json(nullptr);
  j["efficiency"] = s.time ? json(s.time->efficiency) : json(nullptr);
  j["step_seconds"] =
      s.time ? json(s.time->compute_seconds + s.time->exposed_seconds) : json(nullptr);
  j["tokens_per_second_per_gpu"] = or_null(s.tokens_per_second_per_gpu);
  j["mfu"] = or_null(s.mfu);
  j["wall_clock_seconds"] = or_null(s.wall_clock_seconds);
  j["gpu_hours"] = or_null(s.gpu_hours);
  j["cost"] = or_null(s.cost);
  if (s.step) {
    json collectives = json::array();
    for (const plan::TimedCollective& c : s.step->collectives) {
      const char* phase = c.collective.phase == plan::StepPhase::forward    ? "forward"
                          : c.collective.phase == plan::StepPhase::backward ? "backward"
                                                                            : "after_backward";
      collectives.push_back({{"name", c.collective.name},
                             {"phase", phase},
                             {"overlapped", c.collective.overlapped},
                             {"pieces", c.collective.pieces},
                             {"intra_bytes", c.collective.intra_bytes},
                             {"inter_bytes", c.collective.inter_bytes},
                             {"seconds", c.seconds},
                             {"hidden_seconds", c.hidden_seconds}});
    }
    j["step"] = {{"forward_seconds", s.step->forward_seconds},
                 {"backward_seconds", s.step->backward_seconds},
                 {"collectives", collectives}};
  } else {
    j["step"] = nullptr;
  }
  if (s.offload) {
    const deepspeed::OffloadBytes& o = *s.offload;
    const auto per_node = [&](std::uint64_t b) {
      return in.gpus_per_node ? json(b * std::uint64_t(*in.gpus_per_node)) : json(nullptr);
    };
    j["offload"] = {{"host_bytes_per_gpu", o.host_bytes},
                    {"host_bytes_per_node", per_node(o.host_bytes)},
                    {"nvme_bytes_per_gpu", o.nvme_bytes},
                    {"nvme_bytes_per_node", per_node(o.nvme_bytes)},
                    {"pcie_to_host_bytes_per_step", o.pcie_to_host_per_step},
                    {"pcie_to_gpu_bytes_per_step", o.pcie_to_gpu_per_step}};
  } else {
    j["offload"] = nullptr;
  }
  if (s.runtime) {
    const deepspeed::RuntimeTerms& r = *s.runtime;
    j["peak"] = {{"model_state_bytes", *s.model_state_bytes},
                 {"activation_bytes", in.activation_bytes},
                 {"cuda_overhead_bytes", r.cuda_overhead},
                 {"hpz_secondary_bytes", r.hpz_secondary},
                 {"persistent_param_bytes", r.persistent_params},
                 {"reduce_buffer_bytes", r.reduce_buffer_held + r.reduce_buffers},
                 {"gathered_param_bytes", r.gathered_params},
                 {"layer_grad_bytes", r.layer_grads},
                 {"dequantized_weight_bytes", r.dequantized_weight},
                 {"step_fp32_grad_bytes", r.step_fp32_grads},
                 {"step_flat_grad_bytes", r.step_flat_grads},
                 {"optimizer_temp_bytes", r.optimizer_temporaries},
                 {"deferred_grad_bytes", r.deferred_grads},
                 {"peak_bytes", *s.total_bytes}};
  } else {
    j["peak"] = nullptr;
  }
  if (s.levels) {
    // The step's seconds split by where its collectives run: those inside one node, and those
    // that cross nodes (at the slower level's rate, plan/step_model.h); null without a step.
    json intra = nullptr, inter = nullptr;
    if (s.step) {
      double inside = 0, across = 0;
      for (const plan::TimedCollective& c : s.step->collectives) {
        (c.collective.inter_bytes > 0 ? across : inside) += c.seconds;
      }
      intra = inside;
      inter = across;
    }
    j["levels"] = {{"intra_bytes", s.levels->intra},
                   {"inter_bytes", s.levels->inter},
                   {"intra_seconds", intra},
                   {"inter_seconds", inter}};
  } else {
    j["levels"] = nullptr;
  }
  return j;
}

json gpu_json(const catalog::GpuSpec& g) {
  return {{"name", std::string(g.name)},
          {"device", std::string(g.device)},
          {"sold_as", std::string(g.sold_as)},
          {"reported_bytes", g.reported_bytes},
          {"reported_as", std::string(g.reported_as)},
          {"source", std::string(g.source)}};
}

// The cards sold as --gpu-memory's figure ("40GB"), with what each reports; empty with --gpu.
json cards_json(const PlanInputs& in) {
  json cards = json::array();
  if (in.gpu || !in.gpu_memory) return cards;
  for (const catalog::GpuSpec* g : catalog::cards_sold_as(*in.gpu_memory)) {
    cards.push_back(gpu_json(*g));
  }
  return cards;
}

// The optimizer's row of the table of state slots (zerodp/common/optimizers.h).
json optimizer_json(plan::Optimizer id) {
  const OptimizerRow& row = optimizer_row(id);
  json slots = json::array();
  for (const StateSlot& slot : row.slots) {
    slots.push_back({{"holds", slot.holds},
                     {"format", slot.format == SlotFormat::fp32   ? "fp32"
                                : slot.format == SlotFormat::bf16 ? "bf16"
                                                                  : "int8 block-wise"}});
  }
  return {{"name", row.word},
          {"described", row.described},
          {"fp32_master", row.fp32_master},
          {"slots", slots},
          {"source", row.source}};
}

}  // namespace

std::string plan_json(const PlanReport& report, const FieldNamer& name) {
  const PlanInputs& in = report.inputs;
  json j;
  const char* convention = convention_name(report);
  j["inputs"] = {
      {"params", or_null(in.params)},
      {"gpus", or_null(in.gpus)},
      {"gpu_memory_bytes", or_null(in.gpu_memory)},
      {"optimizer_impl", std::string(deepspeed::optimizer_impl_name(in.optimizer_impl))},
      {"framework", std::string(deepspeed::framework_name(in.framework))},
      {"limit_all_gathers", in.framework == deepspeed::Framework::fsdp
                                ? json(in.fsdp_limit_all_gathers)
                                : json(nullptr)},
      {"gpu", in.gpu ? gpu_json(*in.gpu) : json(nullptr)},
      {"cards_sold_as_gpu_memory", cards_json(in)},
      {"activation_bytes", in.activations_given ? json(in.activation_bytes) : json(nullptr)},
      {"round_to", or_null(in.round_to)},
      {"offload_optimizer", std::string(deepspeed::offload_device_name(in.offload.optimizer))},
      {"offload_params", std::string(deepspeed::offload_device_name(in.offload.params))},
      {"gpus_per_node", or_null(in.gpus_per_node)},
      {"host_memory_bytes", or_null(in.host_memory)},
      {"nodes", in.topology ? json(in.topology->nodes) : json(nullptr)},
      {"intra_bandwidth_bytes_per_second", or_null(in.intra_bandwidth)},
      {"inter_bandwidth_bytes_per_second", or_null(in.inter_bandwidth)},
      {"zeropp",
       {{"qwz", in.zeropp.qwz},
        {"hpz_partition_size", in.zeropp.hpz_span()},
        {"qgz", in.zeropp.qgz}}},
      {"buffers", in.buffers ? json(in.buffers_source) : json(nullptr)},
      {"cuda_overhead_bytes", in.cuda_overhead},
      {"largest_layer_params", or_null(in.largest_layer)},
      {"deepspeed_config", in.deepspeed_config.empty() ? json(nullptr) : json(in.deepspeed_config)},
      {"deepspeed_config_summary",
       in.deepspeed_config.empty() ? json(nullptr) : json(in.deepspeed_summary)},
      {"configured_stage",
       in.configured_stage ? json(stage_number(*in.configured_stage)) : json(nullptr)},
      {"count_both_directions", in.seed_directions == plan::Directions::both},
      {"compute_seconds", or_null(in.compute_seconds)},
      {"bandwidth_bytes_per_second", or_null(in.bandwidth)},
      {"overlap", in.compute_seconds ? json(in.overlap.value_or(0.0)) : json(nullptr)},
      {"comm_bytes", or_null(in.comm_bytes)},
      {"time_from", convention ? json(convention) : json(nullptr)},
      {"step_not_predicted", in.step_not_predicted.empty()
                                 ? json(nullptr)
                                 : json(name_fields(in.step_not_predicted, name))},
      {"grad_accum", in.step_compute ? json(in.step_compute->grad_accum) : json(nullptr)},
      {"tokens", or_null(in.tokens)},
      {"price_per_gpu_hour", or_null(in.price_per_gpu_hour)},
      {"dense_flops_per_second", or_null(in.dense_flops)},
      {"efficiency", in.hfu ? json{{"value", *in.hfu}, {"origin", in.hfu_origin}} : json(nullptr)},
      {"step_links",
       in.step_topology && in.step_links
           ? json{{"gpus_per_node", in.step_topology->gpus_per_node},
                  {"nodes", in.step_topology->nodes},
                  {"intra", in.intra_link.empty() ? json(nullptr) : json(in.intra_link)},
                  {"inter", in.inter_link.empty() ? json(nullptr) : json(in.inter_link)},
                  {"intra_bus_bytes_per_second",
                   in.step_links->intra > 0 ? json(in.step_links->intra) : json(nullptr)},
                  {"inter_bus_bytes_per_second",
                   in.step_links->inter > 0 ? json(in.step_links->inter) : json(nullptr)}}
           : json(nullptr)},
  };
  if (in.model) {
    const catalog::ModelParams& p = in.model->params;
    j["model"] = {{"name", in.model->name},
                  {"source", in.model->source},
                  {"model_type", in.model->model_type},
                  {"params", p.params},
                  {"active_params", p.active_params},
                  {"largest_layer_params", p.largest_layer_params},
                  {"embedding_params", p.embedding_params},
                  {"per_layer_params", p.per_layer_params}};
  } else {
    j["model"] = nullptr;
  }
  if (in.lora) {
    const LoraInput& l = *in.lora;
    json parts = json::array();
    for (const plan::FrozenPart& part : in.frozen) {
      parts.push_back({{"holds", std::string(part.holds)},
                       {"elements", part.elements},
                       {"element_bytes", part.bytes},
                       {"sharded_by_zero3", part.shardable}});
    }
    j["lora"] = {{"rank", l.rank},
                 {"alpha", l.alpha},
                 {"dropout", l.dropout},
                 {"targets", l.targets},
                 {"modules_to_save", l.modules_to_save},
                 {"adapter_params", l.adapter_params},
                 {"saved_module_params", l.saved_params},
                 {"trained_params", or_null(in.params)},
                 {"frozen_params", l.frozen_params},
                 {"quantize", l.nf4 ? json("nf4") : json(nullptr)},
                 {"quantized_params", l.nf4 ? json(l.quantized_params) : json(nullptr)},
                 {"double_quant", l.nf4 ? json(l.double_quant) : json(nullptr)},
                 {"frozen_bytes", plan::frozen_total_bytes(in.frozen)},
                 {"frozen_parts", parts},
                 {"source", l.source}};
  } else {
    j["lora"] = nullptr;
  }
  j["bytes_per_param"] = {
      {"params", in.bpp.params},
      {"grads", in.bpp.grads},
      {"optimizer", in.bpp.optimizer},
      {"total", in.bpp.total()},
      {"optimizer_block", in.bpp.block > 0
                              ? json{{"elements", in.bpp.block}, {"bytes", in.bpp.block_bytes}}
                              : json(nullptr)},
      {"optimizer_32bit_below", in.bpp.small_below > 0 ? json{{"elements", in.bpp.small_below},
                                                              {"optimizer", in.bpp.small_optimizer}}
                                                       : json(nullptr)},
      {"source", in.bpp_source}};
  j["optimizer"] = in.optimizer ? optimizer_json(*in.optimizer) : json(nullptr);
  j["activation_bytes"] = in.activation_bytes;
  j["activations_source"] = in.activations_given ? json(in.activations_source) : json(nullptr);
  j["budget_bytes"] = or_null(report.budget);
  j["activations_fill_gpu"] = report.activations_fill_gpu;
  json changes = json::array();
  for (const PlanReport::FittingChange& c : report.fitting_changes) {
    changes.push_back({{"change", name_fields(c.change, name)},
                       {"activation_bytes", c.activation_bytes},
                       {"stage", c.stage},
                       {"total_bytes", c.total_bytes},
                       {"gpus", c.gpus.value_or(*in.gpus)}});
  }
  j["what_would_fit"] = changes;
  // With N fixed: the other offloads that fit there (report.h, OffloadChange).
  json offloads = json::array();
  for (const PlanReport::OffloadChange& c : report.offload_changes) {
    offloads.push_back({{"offload_optimizer", deepspeed::offload_device_name(c.offload.optimizer)},
                        {"offload_params", deepspeed::offload_device_name(c.offload.params)},
                        {"activation_change", c.activation_change.empty()
                                                  ? json(nullptr)
                                                  : json(name_fields(c.activation_change, name))},
                        {"stage", c.stage},
                        {"total_bytes", c.total_bytes},
                        {"host_bytes_per_gpu", c.host_bytes_per_gpu},
                        {"nvme_bytes_per_gpu", c.nvme_bytes_per_gpu},
                        {"host_bytes_per_node", or_null(c.host_bytes_per_node)}});
  }
  j["offloads_that_fit"] = offloads;
  // The memory-efficient optimizers that fit at N, or on fewer GPUs (report.h).
  json optimizers = json::array();
  for (const PlanReport::FittingChange& c : report.optimizer_changes) {
    optimizers.push_back({{"optimizer", c.change.substr(c.change.find(' ') + 1)},
                          {"stage", c.stage},
                          {"total_bytes", c.total_bytes},
                          {"gpus", c.gpus ? *c.gpus : std::uint64_t(*in.gpus)}});
  }
  j["optimizers_that_fit"] = optimizers;
  // The run asked beside a full fine-tune, LoRA and QLoRA of the same model, at N.
  json fine_tunes = json::array();
  for (const PlanReport::FineTune& t : report.fine_tunes) {
    json stages = json::array();
    for (std::size_t i = 0; i < 4; ++i) {
      stages.push_back({{"stage", i},
                        {"total_bytes", or_null(t.peak_bytes[i])},
                        {"verdict", t.verdict[i] ? json(std::string(verdict_name(*t.verdict[i])))
                                                 : json(nullptr)},
                        {"min_gpus", or_null(t.min_gpus[i])}});
    }
    fine_tunes.push_back(
        {{"method", t.method},
         {"change", t.change.empty() ? json(nullptr) : json(name_fields(t.change, name))},
         {"trained_params", t.trained_params},
         {"stages", stages},
         {"cheapest_fitting_stage", or_null(t.cheapest_fitting_stage)}});
  }
  j["fine_tunes"] = fine_tunes;
  // Without N: the fewest GPUs as planned, and the changes that need fewer.
  auto fewest = [&](const PlanReport::FittingChange& c) {
    return json{{"change", c.change.empty() ? json(nullptr) : json(name_fields(c.change, name))},
                {"activation_bytes", c.activation_bytes},
                {"stage", c.stage},
                {"total_bytes", c.total_bytes},
                {"gpus", *c.gpus}};
  };
  if (!in.gpus && report.budget && in.params && !in.topology) {
    json fewer = json::array();
    for (const PlanReport::FittingChange& c : report.fewer_gpus_with) fewer.push_back(fewest(c));
    j["fewest_gpus"] = {
        {"as_planned", report.fewest_gpus ? fewest(*report.fewest_gpus) : json(nullptr)},
        {"with_changes", fewer}};
  } else {
    j["fewest_gpus"] = nullptr;
  }
  if (report.tight_band) {
    j["tight_band"] = {{"under", report.tight_band->under},
                       {"over", report.tight_band->over},
                       {"basis", kTightBandBasis}};
  } else {
    j["tight_band"] = nullptr;
  }
  json assumed = json::array();
  for (const Assumption& a : in.assumptions) {
    assumed.push_back({{"input", name_fields(a.field, name)}, {"value", a.value}, {"why", a.why}});
  }
  j["assumptions"] = assumed;
  j["dp_fits_with_activations_cut"] = or_null(report.dp_fits_with_activations_cut);
  j["stages"] = json::array();
  for (const StageReport& s : report.stages) j["stages"].push_back(stage_json(s, in));
  const Answer answer = answer_of(report, false, name);
  j["answer"] = {{"headline", answer.headline},
                 {"verdict", answer.verdict ? json(verdict_name(*answer.verdict)) : json(nullptr)},
                 {"cheapest", answer.cheapest},
                 {"lines", answer.lines}};
  j["cheapest_fitting_stage"] = or_null(report.cheapest_fitting_stage);
  j["fastest_fitting_stage"] = or_null(report.fastest_fitting_stage);
  j["tight_stage"] = or_null(report.tight_stage);
  j["comm_ratio_zero3_to_dp"] = {{"seed", or_null(report.comm_ratio_seed)},
                                 {"ring", or_null(report.comm_ratio_ring)}};
  j["activations_dominate"] = or_null(report.activations_dominate);
  if (in.zeropp.any()) {
    j["zeropp_cross_node_volume_m"] = {
        {"zero3", deepspeed::zeropp_cross_node_volume_in_m(in.bpp, {})},
        {"zeropp", deepspeed::zeropp_cross_node_volume_in_m(in.bpp, in.zeropp)}};
  } else {
    j["zeropp_cross_node_volume_m"] = nullptr;
  }
  j["notes"] = plan_notes(report, false, name);
  j["conventions"] = {
      {"seed", in.seed_directions == plan::Directions::both
                   ? "the seed's count, sent and received: 2*G*phi*(N-1)/N for DP, ZeRO-1, "
                     "ZeRO-2; 2*(2P+G)*phi*(N-1)/N for ZeRO-3"
                   : "the seed's count, one direction: G*phi*(N-1)/N for DP, ZeRO-1, ZeRO-2; "
                     "(2P+G)*phi*(N-1)/N for ZeRO-3"},
      {"ring", "bytes the busiest rank sends with ring collectives over shard_of() chunks"},
      {"units", "bytes, seconds, fractions; 1 GB = 1e9 bytes"}};
  return utf8_dump(std::move(j), 2);
}

}  // namespace zerodp::report
