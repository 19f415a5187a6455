#include "step_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "table_render.h"
#include "zerodp/common/error.h"
#include "zerodp/common/units.h"

namespace zerodp::report {
namespace {

using S = StageReport;

// A step's tokens a GPU, b·s a micro-step times K micro-steps: "16,384", or "4,096 x 4
// micro-steps = 16,384" (in %.4g past 64 bits).
std::string tokens_text(std::uint64_t per_micro_step, std::uint64_t micro_steps) {
  std::string one = units::format_with_commas(per_micro_step);
  if (micro_steps == 1) return one;
  std::string all;
  if (per_micro_step <= UINT64_MAX / micro_steps) {
    all = units::format_with_commas(per_micro_step * micro_steps);
  } else {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", double(per_micro_step) * double(micro_steps));
    all = text;
  }
  return one + " x " + std::to_string(micro_steps) + " micro-steps = " + all;
}

}  // namespace

std::string step_header(const PlanInputs& in) {
  std::string out = "step compute: ";
  const auto& c = in.step_compute;
  if (in.compute_seconds) {
    out += units::format_seconds(*in.compute_seconds) + " (" + field_ref("compute_time") + ")";
    if (c) out += ", shared by the forward and the backward as their FLOPs are";
  } else {
    char flops[160];
    std::snprintf(flops, sizeof flops,
                  "%.4g TFLOP a GPU a step (%s tokens, recomputation counted) at %.4g TFLOP/s x "
                  "%.2f %% = %.4g TFLOP/s",
                  double(c->grad_accum) * (c->forward_flops + c->backward_flops) / 1e12,
                  tokens_text(c->tokens, c->grad_accum).c_str(), *in.dense_flops / 1e12,
                  *in.hfu * 100, *in.dense_flops * *in.hfu / 1e12);
    out += std::string(flops) + " (efficiency: " + in.hfu_origin + ")";
  }
  out += "\nstep links: " + std::to_string(in.step_topology->gpus_per_node) + " GPUs a node x " +
         std::to_string(in.step_topology->nodes) +
         (in.step_topology->nodes == 1 ? " node" : " nodes");
  if (!in.intra_link.empty()) out += "; inside a node " + in.intra_link;
  if (!in.inter_link.empty()) out += "; across nodes " + in.inter_link;
  return out + "\n";
}

std::string step_table(const PlanReport& report, std::size_t width) {
  const PlanInputs& in = report.inputs;
  auto cell = [](auto f) { return [f](const S& s) { return s.step ? f(s) : std::string("-"); }; };
  std::vector<Column> columns = {
      {"step at N = " + std::to_string(*in.gpus),
       [](const S& s) { return std::string(stage_name(s.stage)); }},
      {"compute", cell([](const S& s) {
         return units::format_seconds(s.step->forward_seconds + s.step->backward_seconds);
       })},
      {"comm", cell([](const S& s) { return units::format_seconds(s.step->comm_seconds); })},
      {"exposed", cell([](const S& s) { return units::format_seconds(s.step->exposed_seconds); })},
      {"step", cell([](const S& s) { return units::format_seconds(s.step->step_seconds); })}};
  const bool tokens = std::any_of(report.stages.begin(), report.stages.end(),
                                  [](const S& s) { return s.tokens_per_second_per_gpu; });
  if (tokens) {
    columns.push_back({"tokens/s/GPU", cell([](const S& s) {
                         return units::format_with_commas(
                             std::uint64_t(std::llround(*s.tokens_per_second_per_gpu)));
                       })});
  }
  if (std::any_of(report.stages.begin(), report.stages.end(), [](const S& s) { return s.mfu; })) {
    columns.push_back({"MFU", cell([](const S& s) { return units::format_percent(*s.mfu, 1); })});
  }
  if (in.tokens && tokens) {
    columns.push_back({"wall clock", cell([](const S& s) {
                         return units::format_duration(*s.wall_clock_seconds);
                       })});
    columns.push_back({"GPU-hours", cell([](const S& s) {
                         return units::format_with_commas(
                             std::uint64_t(std::llround(*s.gpu_hours)));
                       })});
    if (in.price_per_gpu_hour) {
      columns.push_back({"cost", cell([](const S& s) { return units::format_money(*s.cost); })});
    }
  }
  std::string out = render(columns, report, width);
  out +=
      "step: compute + exposed communication (plan/step_model.h); each collective runs at the "
      "bus rate of the slowest link it crosses";
  out += in.overlap ? ", and " + units::format_percent(*in.overlap, 0) +
                          " of the communication hides behind compute (--overlap)"
                    : ", beside the compute of its phase when the framework overlaps it, "
                      "less one layer or bucket (deepspeed/step_schedule.h)";
  out += ".";
  if (std::any_of(report.stages.begin(), report.stages.end(), [](const S& s) { return !s.step; })) {
    out += " '-': a stage that offloads, whose PCIe copies and CPU step are not modelled.";
  }
  for (const S& s : report.stages) {
    if (!s.step) continue;
    std::string parts;
    for (const plan::TimedCollective& c : s.step->collectives) {
      parts +=
          (parts.empty() ? "" : ", ") + c.collective.name + " " + units::format_seconds(c.seconds);
      if (c.hidden_seconds > 0)
        parts += " (" + units::format_seconds(c.hidden_seconds) + " hidden)";
    }
    if (!parts.empty()) out += "\n" + std::string(stage_name(s.stage)) + ": " + parts + ".";
  }
  return out + "\n";
}

}  // namespace zerodp::report
