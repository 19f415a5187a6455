// peak_terms_of() and peak_breakdown_svg(): what each stage holds per GPU at N.
#include "zerodp/report/breakdown.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>

#include "zerodp/common/error.h"
#include "zerodp/common/svg.h"
#include "zerodp/common/units.h"
#include "zerodp/plan/frozen.h"
#include "zerodp/plan/memory.h"

namespace zerodp::report {
namespace {

// Geometry, in SVG pixels: the plot area, and under it the legend in three columns, so that
// the chart keeps its text legible when a phone scales it to its width.
constexpr double kWidth = 760;
constexpr double kLeft = 80, kRight = 740, kTop = 80, kBottom = 430;
constexpr double kLegendTop = 478, kLegendColumn = 226, kLegendRow = 24;
// One color per term, the same in every chart (the model state's blues, activations green,
// the step's reds); a term not in the table takes the next spare color.
constexpr std::pair<std::string_view, const char*> kTermColors[] = {
    {"model state", "#1f77b4"},
    {"model state without its gradients", "#1f77b4"},
    {"model state on the GPU", "#1f77b4"},
    {"frozen base", "#393b79"},
    {"dequantized weight", "#6b6ecf"},
    {"16-bit params", "#1f77b4"},
    {"gradients", "#aec7e8"},
    {"optimizer states", "#ff7f0e"},
    {"activations", "#2ca02c"},
    {"CUDA", "#7f7f7f"},
    {"hpZ copy", "#17becf"},
    {"persistent params", "#bcbd22"},
    {"reduce buffers", "#9467bd"},
    {"reduce buffer", "#9467bd"},
    {"gathered params", "#8c564b"},
    {"a layer's gradient", "#e377c2"},
    {"step fp32 grads", "#d62728"},
    {"its 16-bit copy", "#ff9896"},
    {"optimizer temporaries", "#ffbb78"},
};
constexpr const char* kSpareColors[] = {"#c5b0d5", "#c49c94", "#dbdb8d", "#9edae5"};

// The seed's three blocks of the model state at N, or nothing when they do not add up to the
// stage's model state (offload, or a framework whose shards count otherwise).
std::vector<PeakTerm> model_state_blocks(const PlanReport& report, const StageReport& s) {
  const PlanInputs& in = report.inputs;
  if (s.offloaded || !in.params || !in.gpus || *in.gpus < 1) return {};
  const int n = *in.gpus;
  const plan::BytesPerParam& b = in.bpp;
  const std::uint64_t p = plan::model_state_bytes(*in.params, n, s.stage, {b.params, 0, 0});
  const std::uint64_t g = plan::model_state_bytes(*in.params, n, s.stage, {0, b.grads, 0});
  plan::BytesPerParam k_only = b;  // K with its block constants and size rule
  k_only.params = 0;
  k_only.grads = 0;
  const std::uint64_t k = plan::model_state_bytes(*in.params, n, s.stage, k_only);
  if (p + g + k != *s.model_state_bytes) return {};
  return {{"16-bit params", p}, {"gradients", g}, {"optimizer states", k}};
}

}  // namespace

PeakBreakdown peak_terms_of(const PlanReport& report, const StageReport& s) {
  PeakBreakdown out;
  if (!s.total_bytes || !s.model_state_bytes) return out;
  const PlanInputs& in = report.inputs;
  auto add = [&out](std::string name, std::uint64_t bytes) {
    if (bytes > 0) out.terms.push_back({std::move(name), bytes});
  };
  if (!s.runtime) {
    const std::vector<PeakTerm> blocks = model_state_blocks(report, s);
    if (blocks.empty()) {
      add(s.offloaded ? "model state on the GPU" : "model state", *s.model_state_bytes);
    }
    for (const PeakTerm& t : blocks) add(t.name, t.bytes);
    add("activations", in.activation_bytes);
    return out;
  }
  const deepspeed::RuntimeTerms& r = *s.runtime;
  const bool step = r.step_sets_peak(in.activation_bytes);
  out.phase = step ? "optimizer step" : "backward";
  // A LoRA run's frozen base apart from what trains (plan/frozen.h).
  const std::uint64_t frozen =
      in.gpus ? std::min(plan::frozen_bytes(in.frozen, *in.gpus, s.stage), *s.model_state_bytes)
              : 0;
  add("frozen base", frozen);
  const std::uint64_t trained = *s.model_state_bytes - frozen;
  // FSDP's gradients are not yet made while the activations peak.
  const std::uint64_t deferred = std::min(r.deferred_grads, trained);
  add(step || deferred == 0 ? "model state" : "model state without its gradients",
      step ? trained : trained - deferred);
  add("CUDA", r.cuda_overhead);
  add("hpZ copy", r.hpz_secondary);
  add("persistent params", r.persistent_params);
  if (step) {
    add("reduce buffer", r.reduce_buffer_held);
    add("step fp32 grads", r.step_fp32_grads);
    if (r.optimizer_temporaries > r.step_flat_grads) {
      add("optimizer temporaries", r.optimizer_temporaries);
    } else {
      add("its 16-bit copy", r.step_flat_grads);
    }
  } else {
    add("activations", in.activation_bytes);
    add("reduce buffers", r.reduce_buffer_held + r.reduce_buffers);
    add("gathered params", r.gathered_params);
    add("a layer's gradient", r.layer_grads);
    add("dequantized weight", r.dequantized_weight);
  }
  return out;
}

std::string peak_breakdown_svg(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  ZERODP_CHECK_MSG(in.gpus.has_value(), "peak_breakdown_svg: the report has no N");
  std::vector<PeakBreakdown> bars;
  std::vector<std::string> names;  // every term, in the order it first appears
  std::uint64_t largest = in.gpu_memory.value_or(0);
  for (const StageReport& s : report.stages) {
    bars.push_back(peak_terms_of(report, s));
    for (const PeakTerm& t : bars.back().terms) {
      if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
    }
    largest = std::max(largest, s.total_bytes.value_or(0));
  }
  const units::ByteUnit unit = units::byte_unit_for(std::max<std::uint64_t>(largest, 1), binary);
  const double top_value = std::max(1.0, double(largest) / unit.bytes) * 1.08;
  const double step = svg::nice_step(top_value, 6);
  const double y_max = std::ceil(top_value / step) * step;
  auto y_of = [&](double bytes) {
    return kBottom - (bytes / unit.bytes) / y_max * (kBottom - kTop);
  };
  auto color_of = [&](const std::string& name) -> const char* {
    for (const auto& [term, color] : kTermColors) {
      if (term == name) return color;
    }
    std::size_t spare = 0;
    for (const std::string& n : names) {
      if (n == name) break;
      const bool known = std::any_of(std::begin(kTermColors), std::end(kTermColors),
                                     [&](const auto& t) { return t.first == n; });
      spare += known ? 0 : 1;
    }
    return kSpareColors[spare % std::size(kSpareColors)];
  };

  // As tall as the legend's rows need (the GPU memory's entry and the terms, three a row).
  const std::size_t entries = names.size() + (in.gpu_memory ? 1 : 0);
  const double height = kLegendTop + kLegendRow * double((entries + 2) / 3) + 12;
  svg::Document doc(kWidth, height);
  doc.text(kLeft, 32, "Memory per GPU at N = " + std::to_string(*in.gpus) + ", term by term", 20,
           svg::Anchor::start, "#222", true);
  std::string subtitle =
      in.params ? "Φ = " + units::format_count(*in.params) + ", " + in.bpp_source : in.bpp_source;
  if (report.runtime_counted) subtitle += "; each bar: the phase that sets the peak";
  doc.text(kLeft, 56, subtitle, 15, svg::Anchor::start, "#555");

  // Grid and y axis.
  const svg::Stroke grid{"#e3e3e3", 1, ""};
  const svg::Stroke axis{"#333", 1, ""};
  for (double v = 0; v <= y_max + step / 2; v += step) {
    const double y = kBottom - v / y_max * (kBottom - kTop);
    doc.line(kLeft, y, kRight, y, grid);
    doc.text(kLeft - 8, y + 5, svg::tick_label(v, step < 1 ? "%.1f" : "%.0f"), 14,
             svg::Anchor::end);
  }
  doc.line(kLeft, kTop, kLeft, kBottom, axis);
  doc.line(kLeft, kBottom, kRight, kBottom, axis);
  doc.text(24, (kTop + kBottom) / 2, "memory per GPU (" + std::string(unit.name) + ")", 15,
           svg::Anchor::middle, "#222", false, -90);

  // One stacked bar per stage.
  const double slot = (kRight - kLeft) / double(bars.size());
  const double width = slot * 0.56;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const StageReport& s = report.stages[i];
    const double x = kLeft + slot * double(i) + (slot - width) / 2;
    std::uint64_t below = 0;
    for (const PeakTerm& t : bars[i].terms) {
      const double y0 = y_of(double(below)), y1 = y_of(double(below + t.bytes));
      doc.rect(x, y1, width, y0 - y1, color_of(t.name), nullptr);
      below += t.bytes;
    }
    const std::string name(stage_name(s.stage));
    doc.text(x + width / 2, kBottom + 22, name, 16, svg::Anchor::middle, "#222", true);
    if (!s.total_bytes) {
      doc.text(x + width / 2, kBottom - 8, "—", 13, svg::Anchor::middle, "#555");
      continue;
    }
    // The label in the verdict's colour: dark when it fits, amber when tight, red when not;
    // "tight" is said in words beside the number, a colour alone being no answer.
    const Verdict verdict = s.verdict.value_or(Verdict::fits);
    const std::string label =
        units::format_bytes(*s.total_bytes, binary) + (verdict == Verdict::tight ? " (tight)" : "");
    doc.text(x + width / 2, y_of(double(*s.total_bytes)) - 6, label, 16, svg::Anchor::middle,
             verdict == Verdict::fits    ? "#222"
             : verdict == Verdict::tight ? "#9a6700"
                                         : "#b00020",
             true, 0, true);
    if (!bars[i].phase.empty()) {
      doc.text(x + width / 2, kBottom + 40, bars[i].phase, 13, svg::Anchor::middle, "#555");
    }
  }

  // The GPU's memory: what each bar must stay under (named in the legend, where no bar's label
  // can cover it).
  const svg::Stroke memory_line{"#b00020", 2, "8 5"};
  if (in.gpu_memory) {
    const double y = y_of(double(*in.gpu_memory));
    doc.line(kLeft, y, kRight, y, memory_line);
  }

  // The legend under the bars: each term's color, in rows of three, the term at the top of
  // the bars first (the first term is at the bottom).
  std::size_t at = 0;
  if (in.gpu_memory) {
    doc.line(kLeft, kLegendTop + 8, kLeft + 15, kLegendTop + 8, memory_line);
    doc.text(kLeft + 22, kLegendTop + 13,
             "GPU memory " + units::format_bytes(*in.gpu_memory, binary), 15, svg::Anchor::start,
             "#b00020", true);
    ++at;
  }
  for (auto it = names.rbegin(); it != names.rend(); ++it, ++at) {
    const double lx = kLeft + kLegendColumn * double(at % 3);
    const double ly = kLegendTop + kLegendRow * double(at / 3);
    doc.rect(lx, ly, 15, 15, color_of(*it), nullptr);
    doc.text(lx + 22, ly + 13, *it, 15, svg::Anchor::start);
  }
  return doc.str();
}

}  // namespace zerodp::report
