// plan_table(): the plan for people. Only the columns the inputs determine are shown; the
// memory columns share one unit and the communication columns another, so values can be
// compared down a column and across the memory group.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "zerodp/plan_report.h"
#include "zerodp/units.h"

namespace zerodp::plan {
namespace {

struct Column {
  std::string header;
  std::function<std::string(const StageReport&)> cell;
};

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

std::string render(const std::vector<Column>& columns, const PlanReport& report) {
  std::vector<std::vector<std::string>> rows(1);
  for (const Column& c : columns) rows[0].push_back(c.header);
  for (const StageReport& s : report.stages) {
    rows.emplace_back();
    for (const Column& c : columns) rows.back().push_back(c.cell(s));
  }
  std::vector<std::size_t> width(columns.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      line += i == 0 ? row[i] + pad : "  " + pad + row[i];  // stage left, numbers right
    }
    out += line + "\n";
  }
  return out;
}

template <typename T>
std::uint64_t largest(const PlanReport& report, T field) {
  std::uint64_t most = 0;
  for (const StageReport& s : report.stages) {
    if (const auto& v = s.*field) most = std::max<std::uint64_t>(most, *v);
  }
  return most;
}

std::string header(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  auto bytes = [binary](std::uint64_t b) { return units::format_bytes(b, binary); };
  std::string out = "zerodp plan:";
  if (in.params) out += " params = " + units::format_count(*in.params);
  if (in.gpus) out += std::string(in.params ? "," : "") + " N = " + std::to_string(*in.gpus);
  out += in.params || in.gpus ? "\n" : " efficiency of a given volume\n";
  if (in.model) {
    const ModelParams& p = in.model->params;
    out += "model: " + in.model->name + " (" + in.model->model_type + ", " + in.model->source +
           "): " + units::format_with_commas(p.params) + " parameters";
    if (p.active_params != p.params)
      out += ", " + units::format_with_commas(p.active_params) + " active per token";
    out += "; largest layer " + units::format_with_commas(p.largest_layer_params) + "\n";
  }
  const BytesPerParam& b = in.bpp;
  out += "bytes per param: " + std::to_string(b.params) + " params + " + std::to_string(b.grads) +
         " grads + " + std::to_string(b.optimizer) + " optimizer = " + std::to_string(b.total()) +
         " (" + in.bpp_source + ")\n";
  if (in.activations_given) {
    out += "activations: " + bytes(in.activation_bytes) + " per GPU (" + in.activations_source +
           "; not sharded by ZeRO)\n";
  }
  if (!in.deepspeed_config.empty()) {
    out += "deepspeed config: " + in.deepspeed_config + ": " + in.deepspeed_summary + "\n";
  }
  if (in.offload.any()) {
    out += "offload: optimizer states to " +
           std::string(offload_device_name(in.offload.optimizer)) + " (ZeRO-1, 2, 3), params to " +
           std::string(offload_device_name(in.offload.params)) +
           " (ZeRO-3); model state is what stays on the GPU\n";
  }
  if (report.budget) {
    out += "GPU memory: " + bytes(*in.gpu_memory) +
           (in.activations_given ? " - activations " + bytes(in.activation_bytes) : "") +
           " = model-state budget " + bytes(*report.budget) +
           (in.activations_given ? "" : " (no activations given)") + "\n";
  }
  if (in.compute_seconds) {
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
    out += in.seed_directions == Directions::both
               ? "comm seed: the seed's count, sent + received: 2*G*params*(N-1)/N for DP, "
                 "ZeRO-1, ZeRO-2; 2*(2P+G)*params*(N-1)/N for ZeRO-3.\n"
               : "comm seed: the seed's count, one direction: G*params*(N-1)/N for DP, ZeRO-1, "
                 "ZeRO-2; (2P+G)*params*(N-1)/N for ZeRO-3.\n";
    out +=
        "comm ring: bytes the busiest rank sends per step with ring collectives (what the "
        "engine measures).\n";
  }
  if (in.params) out += "floor: the model state per GPU as N grows without bound.\n";
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
    if (in.activations_given) {
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
    columns.push_back({"fits", [](const S& s) { return std::string(*s.fits ? "yes" : "no"); }});
  }
  if (in.params && report.budget) {
    columns.push_back({"least N", [](const S& s) {
                         return s.min_gpus ? std::to_string(*s.min_gpus) : std::string("none");
                       }});
  }
  if (!in.params && in.gpus && report.budget) {
    columns.push_back({"largest model",
                       [](const S& s) { return units::format_count(*s.max_params) + " params"; }});
  }
}

// The two communication columns, in one unit, and the step time they cost.
void add_comm_columns(std::vector<Column>& columns, const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const units::ByteUnit comm = units::byte_unit_for(
      std::max(largest(report, &S::comm_seed), largest(report, &S::comm_ring)), binary);
  if (in.params && in.gpus) {
    columns.push_back(
        bytes_column(in.seed_directions == Directions::both ? "comm seed (both dirs)" : "comm seed",
                     &S::comm_seed, comm, binary));
    columns.push_back(bytes_column("comm ring", &S::comm_ring, comm, binary));
  }
  if (in.compute_seconds) {
    columns.push_back(
        {"comm time", [](const S& s) { return units::format_seconds(s.time->comm_seconds); }});
    columns.push_back(
        {"exposed", [](const S& s) { return units::format_seconds(s.time->exposed_seconds); }});
    columns.push_back(
        {"efficiency", [](const S& s) { return units::format_percent(s.time->efficiency, 2); }});
  }
}

// Where the offloaded state goes and what crosses PCIe, per stage it applies to.
std::string offload_table(const PlanReport& report, bool binary) {
  const int per_node = report.inputs.gpus_per_node.value_or(0);
  auto field = [binary](std::uint64_t OffloadBytes::*f) {
    return [binary, f](const S& s) {
      return s.offload ? units::format_bytes((*s.offload).*f, binary) : std::string("-");
    };
  };
  std::vector<Column> columns = {
      {"offload at N", [](const S& s) { return std::string(stage_name(s.stage)); }},
      {"host/GPU", field(&OffloadBytes::host_bytes)}};
  if (per_node > 0) {
    columns.push_back(
        {"host/node (" + std::to_string(per_node) + " GPUs)", [binary, per_node](const S& s) {
           return s.offload ? units::format_bytes(s.offload->host_bytes * per_node, binary)
                            : std::string("-");
         }});
  }
  columns.push_back({"NVMe/GPU", field(&OffloadBytes::nvme_bytes)});
  columns.push_back({"PCIe to host/step", field(&OffloadBytes::pcie_to_host_per_step)});
  columns.push_back({"PCIe to GPU/step", field(&OffloadBytes::pcie_to_gpu_per_step)});
  return render(columns, report) +
         "host: the offloaded states and an fp32 copy of the rank's gradient shard (the CPU "
         "optimizer steps on it); PCIe: the 16-bit gradient shard down, the updated 16-bit "
         "params up, and with params offloaded their shard up for each gather (plan_offload.h). "
         "'-': the offload does not apply at that stage.\n";
}

}  // namespace

std::string plan_table(const PlanReport& report, bool binary) {
  std::vector<Column> columns = {
      {"stage", [](const S& s) { return std::string(stage_name(s.stage)); }}};
  add_memory_columns(columns, report, binary);
  add_fit_columns(columns, report);
  add_comm_columns(columns, report, binary);

  std::string out = header(report, binary) + render(columns, report);
  if (report.inputs.offload.any() && report.inputs.params && report.inputs.gpus) {
    out += "\n" + offload_table(report, binary);
  }
  const std::vector<std::string> notes = plan_notes(report, binary);
  if (!notes.empty()) out += "\n";
  for (const std::string& note : notes) out += note + "\n";
  const std::string foot = footer(report);
  if (!foot.empty()) out += "\n" + foot;
  return out;
}

}  // namespace zerodp::plan
