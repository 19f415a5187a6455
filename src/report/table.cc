// plan_table(): the plan for people. Only the columns the inputs determine are shown; the
// memory columns share one unit and the communication columns another, so values can be
// compared down a column and across the memory group.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "step_table.h"
#include "table_render.h"
#include "zerodp/common/text_wrap.h"
#include "zerodp/common/units.h"
#include "zerodp/report/answer.h"
#include "zerodp/report/notes.h"
#include "zerodp/report/table.h"

namespace zerodp::report {
namespace {

// A bandwidth in the byte unit that suits it; in scientific notation when it is below 1 B/s or
// beyond 64 bits of bytes (--bandwidth accepts any positive finite rate, "1e300TB/s" too).
std::string rate(double bytes_per_second, bool binary) {
  if (bytes_per_second >= 1 && bytes_per_second < 18446744073709551616.0) {
    return units::format_bytes(static_cast<std::uint64_t>(bytes_per_second), binary) + "/s";
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g B/s", bytes_per_second);
  return text;
}

template <typename T>
std::uint64_t largest(const PlanReport& report, T field) {
  std::uint64_t most = 0;
  for (const StageReport& s : report.stages) {
    if (const auto& v = s.*field) most = std::max<std::uint64_t>(most, *v);
  }
  return most;
}

// What the GPU memory is: a card's own report (--gpu); or, for a figure some cards are sold by
// ("40GB"), what those cards report instead, which is what a run can fill.
std::string gpu_line(const PlanInputs& in, bool binary) {
  // Two decimals, as PyTorch prints a device's total: "84.98 GB" and "84.94 GB" differ.
  auto precise = [binary](std::uint64_t b) {
    return binary ? units::format_bytes_in(b, {"GiB", double(1ull << 30)})
                  : units::format_bytes_in(b, {"GB", 1e9});
  };
  if (in.gpu) {
    const catalog::GpuSpec& g = *in.gpu;
    return "GPU: " + std::string(g.device) + ", sold as " + std::string(g.sold_as) +
           "; it reports " + units::format_bytes_in(g.reported_bytes, {"GiB", double(1ull << 30)}) +
           " (" + units::format_bytes_in(g.reported_bytes, {"GB", 1e9}) + ") to CUDA (" +
           std::string(g.source) + ": " + std::string(g.reported_as) + ")\n";
  }
  const std::vector<const catalog::GpuSpec*> cards = catalog::cards_sold_as(*in.gpu_memory);
  if (cards.empty()) return {};
  std::string out = "note: cards sold as " + std::to_string(cards[0]->sold_gb) +
                    " GB report other totals to CUDA:";
  for (std::size_t i = 0; i < cards.size(); ++i) {
    out += std::string(i == 0 ? " " : ", ") + std::string(cards[i]->name) + " " +
           precise(cards[i]->reported_bytes);
  }
  return out + " (--gpu NAME plans for the card)\n";
}

// The defaults taken for what was not given, on one line, each with the flag that changes it.
std::string assumptions_line(const PlanReport& report, const FieldNamer& name) {
  const std::vector<Assumption>& all = report.inputs.assumptions;
  if (all.empty()) return {};
  std::string out = "assumed (not given):";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Assumption& a = all[i];
    out += std::string(i == 0 ? " " : "; ") + a.field + " " + a.value +
           (a.why.empty() ? std::string() : " (" + a.why + ")");
  }
  return name_fields(out, name) + "\n";
}

// "LoRA: rank 8 on q_proj, v_proj (alpha 16, dropout 0.05): 4,194,304 adapter parameters
// train; the base's 6,738,415,616 are frozen, 13.5 GB in 16 bits (ZeRO-3 shards them ...)".
std::string lora_line(const PlanInputs& in, bool binary) {
  const LoraInput& l = *in.lora;
  std::string targets;
  for (const std::string& t : l.targets) targets += (targets.empty() ? "" : ", ") + t;
  char knobs[64];
  std::snprintf(knobs, sizeof knobs, "alpha %g, dropout %g", l.alpha, l.dropout);
  std::string out = std::string(l.nf4 ? "QLoRA" : "LoRA") + ": rank " + std::to_string(l.rank) +
                    " on " + targets + " (" + knobs +
                    "): " + units::format_with_commas(l.adapter_params) +
                    " adapter parameters train";
  if (!l.modules_to_save.empty()) {
    std::string saved;
    for (const std::string& m : l.modules_to_save) saved += (saved.empty() ? "" : ", ") + m;
    out += ", and " + units::format_with_commas(l.saved_params) + " in the copies of " + saved;
  }
  out += "; the base's " + units::format_with_commas(l.frozen_params) + " are frozen, " +
         units::format_bytes(plan::frozen_total_bytes(in.frozen), binary);
  out += l.nf4
             ? ", " + units::format_with_commas(l.quantized_params) + " of them in NF4" +
                   (l.double_quant ? " with double quantization" : ", absmax in fp32") +
                   " (its quantization state whole on every GPU)"
             : " in " + std::to_string(8 * (in.frozen.empty() ? 2 : in.frozen[0].bytes)) + " bits";
  return out + "; ZeRO-3 shards the base, below it every GPU holds it whole\n";
}

std::string header(const PlanReport& report, bool binary, const FieldNamer& name) {
  const PlanInputs& in = report.inputs;
  auto bytes = [binary](std::uint64_t b) { return units::format_bytes(b, binary); };
  std::string out = "zerodp plan:";
  if (in.params) {
    out += std::string(in.lora ? " trained params = " : " params = ") +
           units::format_count(*in.params);
  }
  if (in.gpus) out += std::string(in.params ? "," : "") + " N = " + std::to_string(*in.gpus);
  out += in.params || in.gpus ? "\n" : " efficiency of a given volume\n";
  out += assumptions_line(report, name);
  if (in.model) {
    const catalog::ModelParams& p = in.model->params;
    out += "model: " + in.model->name + " (" + in.model->model_type + ", " + in.model->source +
           "): " + units::format_with_commas(p.params) + " parameters";
    if (p.active_params != p.params)
      out += ", " + units::format_with_commas(p.active_params) + " active per token";
    out += "; largest layer " + units::format_with_commas(p.largest_layer_params) + "\n";
  }
  if (in.lora) out += lora_line(in, binary);
  const plan::BytesPerParam& b = in.bpp;
  out += std::string(in.lora ? "bytes per trained param: " : "bytes per param: ") +
         plan::bytes_per_param_words(b) + " (" + in.bpp_source + ")\n";
  if (in.activations_given) {
    out += "activations: " + bytes(in.activation_bytes) + " per GPU (" + in.activations_source +
           "; not sharded by ZeRO)\n";
  }
  if (!in.deepspeed_config.empty()) {
    out += "deepspeed config: " + in.deepspeed_config + ": " + in.deepspeed_summary + "\n";
  }
  if (in.offload.any()) {
    out += "offload: optimizer states to " +
           std::string(deepspeed::offload_device_name(in.offload.optimizer)) +
           " (ZeRO-1, 2, 3), params to " +
           std::string(deepspeed::offload_device_name(in.offload.params)) +
           " (ZeRO-3); model state is what stays on the GPU\n";
  }
  if (in.topology) {
    const deepspeed::Topology& t = *in.topology;
    out += "topology: " + std::to_string(t.gpus_per_node) + " GPUs per node x " +
           std::to_string(t.nodes) + (t.nodes == 1 ? " node" : " nodes");
    if (in.intra_bandwidth || in.inter_bandwidth) {
      out += "; per GPU " +
             (in.intra_bandwidth ? rate(*in.intra_bandwidth, binary) + " inside a node" : "") +
             (in.intra_bandwidth && in.inter_bandwidth ? ", " : "") +
             (in.inter_bandwidth ? rate(*in.inter_bandwidth, binary) + " across nodes" : "");
    }
    out += "\n";
  }
  if (in.zeropp.any()) {
    out += "ZeRO++: " + deepspeed::zeropp_summary(in.zeropp) + " (ZeRO-3 only; from " +
           in.zeropp_source + ")\n";
  }
  if (report.runtime_counted && in.buffers) {
    // Under FSDP the rows step two ways: DeepSpeed's rows with its optimizer, FSDP's with
    // torch's; the line says which row takes which.
    const bool fsdp = in.framework == deepspeed::Framework::fsdp;
    out += "optimizer step: " + std::string(deepspeed::optimizer_impl_name(in.optimizer_impl)) +
           (fsdp ? " in the DP, ZeRO-1 and ZeRO-2 rows" : "") + " (" + in.optimizer_impl_source +
           ")" +
           (fsdp ? "; " + std::string(deepspeed::optimizer_impl_name(in.fsdp_optimizer_impl)) +
                       " in ZeRO-3's, FSDP's (torch.optim.AdamW" +
                       (in.optimizer_impl_source == "--optimizer-impl" ? ", --optimizer-impl"
                                                                       : ", foreach on CUDA") +
                       ")"
                 : std::string()) +
           "; --optimizer-impl fused, foreach or single\n";
  }
  if (in.framework == deepspeed::Framework::fsdp) {
    out +=
        "framework: PyTorch FSDP, FULL_SHARD in ZeRO-3's row (its units the model's layers, "
        "the root unit what is outside them; shards of " +
        std::to_string(in.fsdp_shard_bytes) + " bytes, gradients made in the backward, the step " +
        std::string(deepspeed::optimizer_impl_name(in.fsdp_optimizer_impl)) +
        (in.fsdp_limit_all_gathers
             ? ""
             : "; limit_all_gathers off: the CPU may run ahead, the same units gathered") +
        "); the DP, ZeRO-1 and ZeRO-2 rows are DeepSpeed's\n";
  }
  if (report.runtime_counted) {
    out += "GPU peak: model state + activations";
    if (in.buffers) out += " + DeepSpeed's buffers (" + in.buffers_source + ")";
    if (in.buffers && in.framework == deepspeed::Framework::fsdp) {
      out += " or, in ZeRO-3's row, FSDP's gathered units and gradients";
    }
    if (in.zeropp.hpz) out += " + hpZ's secondary copy";
    if (in.cuda_overhead > 0) {
      out += " + CUDA context and allocator " + bytes(in.cuda_overhead) + " (" +
             in.cuda_overhead_source + ")";
    }
    out += "\n";
  }
  if (report.budget && report.runtime_counted) {
    out +=
        "GPU memory: " + bytes(*in.gpu_memory) + " (fits and least N compare the peak with it)\n";
  } else if (report.budget && report.activations_fill_gpu) {
    out += "GPU memory: " + bytes(*in.gpu_memory) + ", all of it held by the activations " +
           bytes(in.activation_bytes) +
           (in.cuda_overhead > 0 ? " and CUDA " + bytes(in.cuda_overhead) : "") +
           ": model-state budget 0 B\n";
  } else if (report.budget) {
    out += "GPU memory: " + bytes(*in.gpu_memory) +
           (in.activations_given ? " - activations " + bytes(in.activation_bytes) : "") +
           (in.cuda_overhead > 0 ? " - CUDA " + bytes(in.cuda_overhead) : "") +
           " = model-state budget " + bytes(*report.budget) +
           (in.activations_given ? "" : " (no activations given)") + "\n";
  }
  if (in.gpu_memory) out += gpu_line(in, binary);
  if (report.tight_band) {
    const std::string under = units::format_percent(report.tight_band->under, 0);
    const std::string over = units::format_percent(report.tight_band->over, 0);
    // The errors measured against published runs, one a side (report.h, TightBand).
    const std::string errors = "the planner's errors against published runs, " + under +
                               " under and " + over + " over: docs/validation.md";
    out += in.gpus ? "fits: yes (the peak plus " + under +
                         " within the GPU memory), tight (the run may or may not fit, given " +
                         errors + ") or no; least N: the fewest GPUs on which it is yes\n"
                   : "least N: the fewest GPUs on which the peak plus " + under +
                         " is within the GPU memory (" + errors + ")\n";
  }
  if (in.host_memory) {
    out += "host memory: " + bytes(*in.host_memory) + " per node (" +
           (in.gpus_per_node ? std::to_string(*in.gpus_per_node) + " GPUs a node"
                             : std::string("all N GPUs on one node")) +
           "), checked against the offload's host bytes\n";
  }
  const bool stepped = std::any_of(report.stages.begin(), report.stages.end(),
                                   [](const StageReport& s) { return s.step.has_value(); });
  if (stepped) {
    out += step_header(in);
  } else if (!in.step_not_predicted.empty()) {
    out += "step: not predicted: " + in.step_not_predicted + "\n";
  } else if (in.compute_seconds && in.bandwidth) {
    out += "step: compute " + units::format_seconds(*in.compute_seconds) + ", bandwidth " +
           rate(*in.bandwidth, binary) + " per GPU, overlap " +
           units::format_percent(in.overlap.value_or(0.0), 0) + "; comm time from ";
    out += in.comm_bytes ? "the given volume " + bytes(*in.comm_bytes) + " for every stage"
           : in.time_convention == CommConvention::seed ? std::string("the seed column")
                                                        : std::string("the ring column");
    out += "\n";
  }
  return out + "\n";
}

std::string footer(const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  std::string out;
  if (in.params && in.gpus) {
    out += in.seed_directions == plan::Directions::both
               ? "comm seed: the seed's count, sent + received: 2*G*params*(N-1)/N for DP, "
                 "ZeRO-1, ZeRO-2; 2*(2P+G)*params*(N-1)/N for ZeRO-3.\n"
               : "comm seed: the seed's count, one direction: G*params*(N-1)/N for DP, ZeRO-1, "
                 "ZeRO-2; (2P+G)*params*(N-1)/N for ZeRO-3.\n";
    out +=
        "comm ring: bytes the busiest rank sends per step with ring collectives (what the "
        "engine measures).\n";
    if (in.lora) {
      out +=
          "params: what trains; ZeRO-3 also gathers the frozen base twice a step, its bytes "
          "x 2 x (N-1)/N in the seed's count and on the ring.\n";
    }
  }
  if (in.params) out += "floor: the model state per GPU as N grows without bound.\n";
  if (in.lora) {
    out +=
        "frozen base: whole on every GPU below ZeRO-3, sharded at ZeRO-3 (NF4's quantization "
        "state stays whole).\n";
  }
  if (in.lora && in.lora->nf4) {
    out +=
        "QLoRA: the base's other weights and the residual stream in 16 bits, as bitsandbytes "
        "loads them; PEFT's prepare_model_for_kbit_training (TRL's SFTTrainer calls it) casts "
        "them to fp32, not counted yet (docs/validation.md).\n";
  }
  return out;
}

// A value under a tenth of its column's unit would lose its digits ("0.06 TB"), so it gets
// its own unit ("59.57 GB"); zero keeps the column's.
std::string in_unit(const std::optional<std::uint64_t>& v, units::ByteUnit unit, bool binary) {
  if (!v) return std::string("-");
  if (*v != 0 && static_cast<double>(*v) < 0.1 * unit.bytes) {
    unit = units::byte_unit_for(*v, binary);
  }
  return units::format_bytes_in(*v, unit);
}

using S = StageReport;
using BytesField = std::optional<std::uint64_t> S::*;

// A column of byte counts in `unit`.
Column bytes_column(std::string header, BytesField field, units::ByteUnit unit, bool binary) {
  return {std::move(header), [=](const S& s) { return in_unit(s.*field, unit, binary); }};
}

// Model state, total and floor share one unit: the largest memory figure's.
void add_memory_columns(std::vector<Column>& columns, const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const units::ByteUnit memory =
      units::byte_unit_for(std::max({largest(report, &S::total_bytes),
                                     largest(report, &S::floor_bytes), in.gpu_memory.value_or(0)}),
                           binary);
  if (in.params && in.gpus) {
    columns.push_back(bytes_column("model state", &S::model_state_bytes, memory, binary));
    if (report.runtime_counted) {
      columns.push_back(bytes_column("peak", &S::total_bytes, memory, binary));
    } else if (in.activations_given) {
      columns.push_back(bytes_column("total", &S::total_bytes, memory, binary));
    }
    columns.push_back(
        {"saving vs DP", [](const S& s) { return units::format_percent(*s.savings_vs_dp); }});
  }
  if (in.params) columns.push_back(bytes_column("floor N->inf", &S::floor_bytes, memory, binary));
}

// What fits the budget: at N, the least N, or the largest model.
void add_fit_columns(std::vector<Column>& columns, const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.params && in.gpus && report.budget) {
    // "tight": within the planner's measured error of the GPU's memory (report.h, Verdict).
    columns.push_back({"fits", [](const S& s) { return fits_word(s); }});
  }
  if (in.params && report.budget) {
    columns.push_back({"least N", [](const S& s) {
                         return s.min_gpus ? std::to_string(*s.min_gpus) : std::string("none");
                       }});
  }
  if (!in.params && in.gpus && report.budget) {
    columns.push_back({"largest model", [](const S& s) {
                         // Saturated: the GPU holds none of the model state (all offloaded).
                         return *s.max_params == std::numeric_limits<std::uint64_t>::max()
                                    ? std::string("no GPU bound")
                                    : units::format_count(*s.max_params) + " params";
                       }});
  }
}

// The two communication columns, in one unit, and the step time they cost.
void add_comm_columns(std::vector<Column>& columns, const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const units::ByteUnit comm = units::byte_unit_for(
      std::max(largest(report, &S::comm_seed), largest(report, &S::comm_ring)), binary);
  if (in.params && in.gpus) {
    columns.push_back(bytes_column(
        in.seed_directions == plan::Directions::both ? "comm seed (both dirs)" : "comm seed",
        &S::comm_seed, comm, binary));
    columns.push_back(bytes_column("comm ring", &S::comm_ring, comm, binary));
  }
  // A predicted step has a table of its own (step_table).
  const bool timed = std::any_of(report.stages.begin(), report.stages.end(),
                                 [](const S& s) { return s.time && !s.step; });
  if (timed) {
    auto cell = [](auto f) {
      return [f](const S& s) { return s.time ? f(*s.time) : std::string("-"); };
    };
    columns.push_back({"comm time", cell([](const plan::StepTime& t) {
                         return units::format_seconds(t.comm_seconds);
                       })});
    columns.push_back({"exposed", cell([](const plan::StepTime& t) {
                         return units::format_seconds(t.exposed_seconds);
                       })});
    columns.push_back({"efficiency", cell([](const plan::StepTime& t) {
                         return units::format_percent(t.efficiency, 2);
                       })});
  }
}

// Where the offloaded state goes and what crosses PCIe, per stage it applies to.
std::string offload_table(const PlanReport& report, bool binary, std::size_t width) {
  const int per_node = report.inputs.gpus_per_node.value_or(0);
  auto field = [binary](std::uint64_t deepspeed::OffloadBytes::*f) {
    return [binary, f](const S& s) {
      return s.offload ? units::format_bytes((*s.offload).*f, binary) : std::string("-");
    };
  };
  std::vector<Column> columns = {
      {"offload at N", [](const S& s) { return std::string(stage_name(s.stage)); }},
      {"host/GPU", field(&deepspeed::OffloadBytes::host_bytes)}};
  if (per_node > 0) {
    columns.push_back(
        {"host/node (" + std::to_string(per_node) + " GPUs)", [binary, per_node](const S& s) {
           return s.offload ? units::format_bytes(s.offload->host_bytes * per_node, binary)
                            : std::string("-");
         }});
  }
  columns.push_back({"NVMe/GPU", field(&deepspeed::OffloadBytes::nvme_bytes)});
  columns.push_back({"PCIe to host/step", field(&deepspeed::OffloadBytes::pcie_to_host_per_step)});
  columns.push_back({"PCIe to GPU/step", field(&deepspeed::OffloadBytes::pcie_to_gpu_per_step)});
  return render(columns, report, width) +
         "host: the offloaded states and an fp32 copy of the rank's gradient shard (the CPU "
         "optimizer steps on it); PCIe: the 16-bit gradient shard down, the updated 16-bit "
         "params up, and with params offloaded their shard up for each gather "
         "(deepspeed/offload.h). "
         "'-': the offload does not apply at that stage.\n";
}

// The GPU's peak per rank at N, term by term: only the terms some stage has.
std::string peak_table(const PlanReport& report, bool binary, std::size_t width) {
  const PlanInputs& in = report.inputs;
  const units::ByteUnit unit = units::byte_unit_for(largest(report, &S::total_bytes), binary);
  // A term a stage does not have is "-", not "0.00 TB".
  auto term = [&](std::uint64_t deepspeed::RuntimeTerms::*f) {
    return [=](const S& s) {
      const std::uint64_t b = (*s.runtime).*f;
      return b == 0 ? std::string("-") : in_unit(std::optional(b), unit, binary);
    };
  };
  auto any = [&](std::uint64_t deepspeed::RuntimeTerms::*f) {
    return std::any_of(report.stages.begin(), report.stages.end(),
                       [f](const S& s) { return (*s.runtime).*f > 0; });
  };
  std::vector<Column> columns = {
      {"peak at N = " + std::to_string(*in.gpus),
       [](const S& s) { return std::string(stage_name(s.stage)); }},
      bytes_column("model state", &S::model_state_bytes, unit, binary),
      {"activations",
       [=](const S&) { return in_unit(std::optional(in.activation_bytes), unit, binary); }}};
  const std::pair<const char*, std::uint64_t deepspeed::RuntimeTerms::*> terms[] = {
      {"reduce bufs", &deepspeed::RuntimeTerms::reduce_buffers},
      {"reduce buf (held)", &deepspeed::RuntimeTerms::reduce_buffer_held},
      {"gathered", &deepspeed::RuntimeTerms::gathered_params},
      {"layer grad", &deepspeed::RuntimeTerms::layer_grads},
      {"dequantized", &deepspeed::RuntimeTerms::dequantized_weight},
      {"persistent", &deepspeed::RuntimeTerms::persistent_params},
      {"hpZ copy", &deepspeed::RuntimeTerms::hpz_secondary},
      {"step fp32 grads", &deepspeed::RuntimeTerms::step_fp32_grads},
      {"step grad copy", &deepspeed::RuntimeTerms::step_flat_grads},
      {"optimizer temps", &deepspeed::RuntimeTerms::optimizer_temporaries},
      {"grads made in bwd", &deepspeed::RuntimeTerms::deferred_grads},
      {"CUDA", &deepspeed::RuntimeTerms::cuda_overhead}};
  for (const auto& [name, field] : terms) {
    if (any(field)) columns.push_back({name, term(field)});
  }
  columns.push_back(bytes_column("peak", &S::total_bytes, unit, binary));
  std::string out = render(columns, report, width);
  out +=
      "peak = model state + CUDA + hpZ copy + persistent + reduce buf (held) + max(activations + "
      "reduce bufs + gathered + layer grad" +
      std::string(any(&deepspeed::RuntimeTerms::dequantized_weight) ? " + dequantized" : "") +
      ", step fp32 grads + max(step grad copy, optimizer "
      "temps)): DeepSpeed's reduction buffers, gathered params and a layer's whole gradient "
      "live with the activations, the step's "
      "fp32 copy of the gradient shard (made from a 16-bit flat copy; at stage 0 with fp16, "
      "flattened from fp32 casts of every gradient) and the optimizer's "
      "temporaries after them (deepspeed/runtime.h).";
  if (any(&deepspeed::RuntimeTerms::deferred_grads)) {
    out +=
        " Under FSDP the gradients are made in the backward: the activations' phase holds the "
        "model state less the grads made in bwd, the step's phase all of it.";
  }
  if (in.buffers && in.params && !in.persistent_params) {
    out += " Persistent params need a model config (" + field_ref("model") + ").";
  }
  return out + "\n";
}

// Bytes per GPU inside the node and across nodes, and their time.
std::string level_table(const PlanReport& report, bool binary, std::size_t width) {
  const PlanInputs& in = report.inputs;
  const deepspeed::Topology& t = *in.topology;
  std::uint64_t most = 0;
  for (const S& s : report.stages) most = std::max({most, s.levels->intra, s.levels->inter});
  const units::ByteUnit unit = units::byte_unit_for(most, binary);
  auto level = [=](std::uint64_t deepspeed::LevelBytes::*f) {
    return [=](const S& s) { return in_unit(std::optional((*s.levels).*f), unit, binary); };
  };
  std::vector<Column> columns = {
      {std::to_string(t.gpus_per_node) + " x " + std::to_string(t.nodes) + " GPUs",
       [](const S& s) { return std::string(stage_name(s.stage)); }},
      {"inside node/GPU", level(&deepspeed::LevelBytes::intra)},
      {"across nodes/GPU", level(&deepspeed::LevelBytes::inter)}};
  std::string out = render(columns, report, width);
  out +=
      "levels: each collective runs inside the node, then across nodes: a buffer of B bytes "
      "moves B(n-1)/n per GPU inside and B(k-1)/(kn) across (together the ring column; "
      "deepspeed/topology.h).";
  if (in.zeropp.any()) {
    char m[96];
    std::snprintf(m, sizeof m,
                  " ZeRO++ at ZeRO-3: cross-node volume %gM -> %gM by its paper's count",
                  deepspeed::zeropp_cross_node_volume_in_m(in.bpp, {}),
                  deepspeed::zeropp_cross_node_volume_in_m(in.bpp, in.zeropp));
    out += m;
    out += " (M = the 16-bit model, " +
           units::format_bytes(std::uint64_t(in.bpp.params) * *in.params, binary) + ").";
  }
  return out + "\n";
}

}  // namespace

std::string fits_word(const StageReport& s) {
  if (s.host_fits && !*s.host_fits) return "no (host)";
  return *s.verdict == Verdict::fits ? "yes" : *s.verdict == Verdict::tight ? "tight" : "no";
}

std::string plan_table(const PlanReport& report, bool binary, const FieldNamer& name,
                       std::size_t width) {
  std::vector<Column> columns = {
      {"stage", [](const S& s) { return std::string(stage_name(s.stage)); }}};
  add_memory_columns(columns, report, binary);
  add_fit_columns(columns, report);
  // The predicted step beside the memory: its tokens a second a GPU (its seconds without a
  // model's tokens); step_table() has the rest.
  if (std::any_of(report.stages.begin(), report.stages.end(), [](const S& s) { return s.step; })) {
    const bool tokens = report.stages[0].tokens_per_second_per_gpu.has_value();
    columns.push_back({tokens ? "tok/s/GPU" : "step", [tokens](const S& s) {
                         if (!s.step) return std::string("-");
                         return tokens ? units::format_with_commas(std::uint64_t(
                                             std::llround(*s.tokens_per_second_per_gpu)))
                                       : units::format_seconds(s.step->step_seconds);
                       }});
  }
  add_comm_columns(columns, report, binary);

  // The answer first (answer.h), then the header and the tables it is made of.
  std::string out;
  for (const std::string& line : answer_of(report, binary, name).lines) out += line + "\n";
  if (!out.empty()) out += "\n";
  out += header(report, binary, name) + render(columns, report, width);
  // Each section after a blank line (appended, not "\n" + section: GCC 12 warns on that).
  auto section = [&out](const std::string& text) { out.append("\n").append(text); };
  if (report.runtime_counted && report.inputs.gpus) section(peak_table(report, binary, width));
  if (report.inputs.offload.any() && report.inputs.params && report.inputs.gpus) {
    section(offload_table(report, binary, width));
  }
  // One node's levels are the ring column again: the table earns its place across nodes or
  // with the levels' bandwidths.
  const PlanInputs& in = report.inputs;
  if (report.stages[0].levels &&
      (in.topology->nodes > 1 || in.intra_bandwidth || in.inter_bandwidth)) {
    section(level_table(report, binary, width));
  }
  if (std::any_of(report.stages.begin(), report.stages.end(), [](const S& s) { return s.step; })) {
    section(step_table(report, width));
  }
  const std::vector<std::string> notes = plan_notes(report, binary, name);
  if (!notes.empty()) out += "\n";
  for (const std::string& note : notes) out += note + "\n";
  const std::string foot = footer(report);
  if (!foot.empty()) out += "\n" + foot;
  out = name_fields(out, name);
  return width == 0 ? out : wrap_long_lines(out, width);
}

}  // namespace zerodp::report
