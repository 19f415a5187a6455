// `zerodp plot`: the seed's figure, M_DP and M_1..M_3 against N with their floors, as SVG;
// with --breakdown, each stage's memory per GPU at N term by term against the GPU's memory.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "command.h"
#include "help.h"
#include "output.h"
#include "plan_flags.h"
#include "plan_options.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/units.h"
#include "zerodp/plan/figure.h"
#include "zerodp/report/breakdown.h"
#include "zerodp/report/report.h"

namespace zerodp::cli {
namespace {

struct PlotFlags {
  PlanFlags plan;  // --params, the precision flags and --binary; all of them with --breakdown
  std::string max_gpus = "64", out;
  bool log_x = false, linear_x = false, breakdown = false;
};

// The flags of `plan` that the memory figure reads: the model's count and bytes per parameter.
bool figure_reads(const std::string& name) {
  for (const char* f : {"--params", "--precision", "--optimizer", "--bytes-per-param", "--binary",
                        "--help", "--out", "--max-gpus", "--log-x", "--linear-x", "--breakdown"}) {
    if (name == f) return true;
  }
  return false;
}

// The memory figure: M_DP and M_1..M_3 against N.
void memory_figure(const PlotFlags& f) {
  if (f.plan.params.empty()) {
    throw UsageError("--params: required, a count such as 1e9, 7.5B, 175B or 50M");
  }
  if (f.log_x && f.linear_x) throw UsageError("--linear-x: not with --log-x; choose one");
  plan::FigureOptions options;
  options.params = units::parse_count(f.plan.params, "--params");
  const ModelBytes model = parse_precision_flags(f.plan.model_bytes);
  options.bpp = model.bpp;
  options.bpp_source = model.source;
  plan::check_fits_in_64_bits(options.params, options.bpp);
  options.max_gpus = parse_gpu_count(f.max_gpus, "--max-gpus", 2, plan::kMaxFigureGpus);
  options.log_x = !f.linear_x;
  options.binary = f.plan.binary;
  write_file_atomically(f.out, plan::memory_figure_svg(options));
  std::fprintf(out(), "wrote %s: M_DP, M_1, M_2, M_3 for N = 1..%d (%s N axis), floors dashed\n",
               printable(f.out).c_str(), options.max_gpus, options.log_x ? "log" : "linear");
}

// --breakdown: each stage's memory per GPU at N, term by term, against the GPU's memory.
void breakdown_figure(const PlotFlags& f) {
  if (f.plan.json || f.plan.list_models || f.plan.list_gpus) {
    throw UsageError(std::string(f.plan.json          ? "--json"
                                 : f.plan.list_models ? "--list-models"
                                                      : "--list-gpus") +
                     ": plot writes an SVG; ask zerodp plan for it");
  }
  const report::PlanInputs inputs = read_inputs(f.plan);
  if (!inputs.gpus) {
    throw UsageError("--gpus: required with --breakdown, which shows each stage per GPU at N");
  }
  const report::PlanReport report = report::make_plan(inputs);
  write_file_atomically(f.out, report::peak_breakdown_svg(report, f.plan.binary));
  std::fprintf(
      out(), "wrote %s: memory per GPU at N = %llu of DP, ZeRO-1, ZeRO-2, ZeRO-3, term by term%s\n",
      printable(f.out).c_str(), (unsigned long long)*inputs.gpus,
      inputs.gpu_memory ? ", against the GPU memory" : "");
}

void run(const PlotFlags& f, const CLI::App& cmd) {
  if (f.out.empty()) {
    throw UsageError("--out: required, the path of the SVG to write such as out/memory.svg");
  }
  // A flag the chosen figure does not read is refused rather than ignored.
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->count() == 0) continue;
    const std::string name = option->get_name();
    if (f.breakdown && (name == "--max-gpus" || name == "--log-x" || name == "--linear-x")) {
      throw UsageError(name +
                       ": the memory figure's (N along the axis); not with --breakdown, "
                       "which is drawn at one N");
    }
    if (!f.breakdown && !figure_reads(name)) {
      throw UsageError(name +
                       ": a plan input, which the memory figure does not read; add "
                       "--breakdown for each stage's memory at N with it, or leave it out");
    }
  }
  check_output_file(f.out, "--out", "an SVG file to write such as out/memory.svg");
  if (f.breakdown) {
    breakdown_figure(f);
  } else {
    memory_figure(f);
  }
}

void add_plot_command(CLI::App& root) {
  auto flags = std::make_shared<PlotFlags>();
  CLI::App* cmd = root.add_subcommand("plot");
  describe_command(*cmd);
  PlotFlags& f = *flags;
  cmd->add_option("--out", f.out, "SVG file to write")->type_name("PATH");
  cmd->add_flag("--breakdown", f.breakdown,
                "a stacked bar per stage of its memory per GPU at N (--gpus), term by term "
                "(params, gradients, optimizer states, activations; with a model or a DeepSpeed "
                "config the GPU peak's terms), against the GPU memory; takes every flag of plan");
  cmd->add_option("--max-gpus", f.max_gpus, "right end of the N axis (default 64)")->type_name("N");
  cmd->add_flag("--log-x", f.log_x, "logarithmic N axis (the default)");
  cmd->add_flag("--linear-x", f.linear_x, "linear N axis");
  add_model_options(cmd, f.plan);
  add_gpu_options(cmd, f.plan);
  add_step_options(cmd, f.plan);
  cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

const bool plot_registered = register_command(11, add_plot_command);

}  // namespace
}  // namespace zerodp::cli
