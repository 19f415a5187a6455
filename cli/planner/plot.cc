// `zerodp plot`: the seed's figure, M_DP and M_1..M_3 against N with their floors, as SVG.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "command.h"
#include "plan_options.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/units.h"
#include "zerodp/plan/figure.h"

namespace zerodp::cli {
namespace {

struct PlotFlags {
  std::string params, max_gpus = "64", out;
  PrecisionFlags model;
  bool log_x = false, linear_x = false, binary = false;
};

void run(const PlotFlags& f) {
  if (f.params.empty()) {
    throw UsageError("--params: required, a count such as 1e9, 7.5B, 175B or 50M");
  }
  if (f.out.empty()) {
    throw UsageError("--out: required, the path of the SVG to write such as out/memory.svg");
  }
  check_output_file(f.out, "--out", "an SVG file to write such as out/memory.svg");
  if (f.log_x && f.linear_x) throw UsageError("--linear-x: not with --log-x; choose one");
  plan::FigureOptions options;
  options.params = units::parse_count(f.params, "--params");
  const ModelBytes model = parse_precision_flags(f.model);
  options.bpp = model.bpp;
  options.bpp_source = model.source;
  plan::check_fits_in_64_bits(options.params, options.bpp);
  options.max_gpus = parse_gpu_count(f.max_gpus, "--max-gpus", 2, plan::kMaxFigureGpus);
  options.log_x = !f.linear_x;
  options.binary = f.binary;
  write_file_atomically(f.out, plan::memory_figure_svg(options));
  std::printf("wrote %s: M_DP, M_1, M_2, M_3 for N = 1..%d (%s N axis), floors dashed\n",
              printable(f.out).c_str(), options.max_gpus, options.log_x ? "log" : "linear");
}

void add_plot_command(CLI::App& root) {
  auto flags = std::make_shared<PlotFlags>();
  CLI::App* cmd = root.add_subcommand(
      "plot",
      "Draw model-state memory per GPU of DP and ZeRO-1/2/3 against the number of GPUs N, "
      "with each stage's floor (its limit as N grows) dashed, as SVG");
  PlotFlags& f = *flags;
  cmd->add_option("--params", f.params, "parameters: 1e9, 7.5B, 175B")->type_name("COUNT");
  cmd->add_option("--max-gpus", f.max_gpus, "right end of the N axis (default 64)")->type_name("N");
  cmd->add_option("--out", f.out, "SVG file to write")->type_name("PATH");
  add_precision_flags(*cmd, f.model);
  cmd->add_flag("--log-x", f.log_x, "logarithmic N axis (the default)");
  cmd->add_flag("--linear-x", f.linear_x, "linear N axis");
  cmd->add_flag("--binary", f.binary, "GiB instead of GB on the memory axis");
  cmd->callback([flags] { run(*flags); });
}

const bool registered = register_command(11, add_plot_command);

}  // namespace
}  // namespace zerodp::cli
