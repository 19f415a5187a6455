// zerodp measure: runs a few steps of each stage and prints what every rank holds and sends,
// beside the planner's prediction for the same Φ and N.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "app.h"
#include "command.h"
#include "engine_flags.h"
#include "help.h"
#include "model_flags.h"
#include "output.h"
#include "zerodp/common/error.h"
#include "zerodp/common/json_utf8.h"
#include "zerodp/run/measurement.h"
#include "zerodp/run/measurement_table.h"

namespace zerodp::cli {
namespace {

struct MeasureFlags {
  run::MeasureChoice run;
  bool per_rank = false;
  bool json = false;
};

void print_results(const MeasureFlags& f, const run::Measurement& measurement,
                   const std::vector<run::StageMeasure>& results) {
  const run::MeasureSetup& setup = measurement.setup();
  if (!f.json) {
    std::fputs(run::measurement_table(setup, results, f.per_rank || !measurement.all_stages(),
                                      flag_of_field)
                   .c_str(),
               out());
    return;
  }
  if (results.size() == 1) {
    std::fprintf(out(), "%s\n", utf8_dump(run::measure_json(setup, results[0]), 2).c_str());
    return;
  }
  nlohmann::json all = {{"stages", nlohmann::json::array()}};
  for (const run::StageMeasure& s : results) all["stages"].push_back(run::measure_json(setup, s));
  std::fprintf(out(), "%s\n", utf8_dump(all, 2).c_str());
}

void run_measure(MeasureFlags f, bool stage_given) {
  f.run.stage_given = stage_given;
  // What scripts/cluster.sh shaped, when the link is not given.
  if (f.run.link_rate.empty()) {
    if (const char* env = std::getenv("ZERODP_LINK_RATE")) f.run.link_rate = env;
    if (const char* env = std::getenv("ZERODP_LINK_DELAY"); env && f.run.link_delay.empty()) {
      f.run.link_delay = env;
    }
  }
  run::Measurement measurement(f.run);
  const std::vector<run::StageMeasure> results = measurement.run();
  if (results.empty()) return;  // an MPI rank other than 0
  print_results(f, measurement, results);
}

void add_measure_command(CLI::App& root) {
  auto flags = std::make_shared<MeasureFlags>();
  CLI::App* app = root.add_subcommand("measure");
  describe_command(*app);
  add_model_flags(app, flags->run.model, "10M");
  add_lora_flags(app, flags->run.model);
  app->add_option("--steps", flags->run.steps, "measured steps after one warm-up [3]");
  app->add_flag("--all-stages", flags->run.all_stages, "measure stages 0-3 side by side");
  app->add_flag("--per-rank", flags->per_rank, "print every rank, not only rank 0");
  app->add_flag("--json", flags->json, "print JSON instead of tables");
  app->add_option("--link-rate", flags->run.link_rate,
                  "the link between hosts (200Mbit/s, 1gbit, 12.5GB/s): adds the planner's "
                  "replay of the step on it [scripts/cluster.sh's --rate]");
  app->add_option("--link-delay", flags->run.link_delay,
                  "the link's one-way delay (250us, 2ms) [scripts/cluster.sh's --delay, else 0]");
  add_engine_flags(app, flags->run.engine);
  app->callback([flags, app] { run_measure(*flags, app->count("--stage") > 0); });
}

const bool measure_registered = register_command(20, add_measure_command);

}  // namespace
}  // namespace zerodp::cli
