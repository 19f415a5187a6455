// zerodp measure: runs a few steps of each stage and prints what every rank holds and sends,
// beside the planner's prediction for the same Φ and N.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "app.h"
#include "command.h"
#include "engine_flags.h"
#include "model_flags.h"
#include "output.h"
#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/model/gemm.h"
#include "zerodp/predict/schedule.h"
#include "zerodp/run/engine_run.h"
#include "zerodp/run/measurement.h"
#include "zerodp/run/measurement_table.h"

namespace zerodp::cli {
namespace {

// Measured steps: a measurement takes the median of a few; more is only waiting.
constexpr std::uint64_t kMaxSteps = 10'000;

struct LinkFlags {
  std::string rate, delay;
};

struct MeasureFlags {
  EngineFlags engine;
  run::ModelChoice model;  // --model mlp (with --params 10M) unless told otherwise
  std::string steps = "3";
  bool all_stages = false;
  bool per_rank = false;
  bool json = false;
  LinkFlags link;
};

// The link between hosts, for the planner's replay of the step: --link-rate/--link-delay, or
// what scripts/cluster.sh shaped (ZERODP_LINK_RATE, ZERODP_LINK_DELAY); rate 0 when unknown.
predict::Link link_of(const LinkFlags& f) {
  predict::Link link;
  std::string rate = f.rate, delay = f.delay;
  if (rate.empty()) {
    if (const char* env = std::getenv("ZERODP_LINK_RATE")) rate = env;
    if (const char* env = std::getenv("ZERODP_LINK_DELAY"); env && delay.empty()) delay = env;
  }
  if (!delay.empty() && rate.empty()) {
    throw UsageError("--link-delay needs --link-rate: the replay of a step needs the link's rate");
  }
  if (!rate.empty()) link.bits_per_second = 8.0 * units::parse_bandwidth(rate, "--link-rate");
  if (!delay.empty()) link.delay_seconds = units::parse_seconds_in(delay, "--link-delay", 0, 60);
  return link;
}

void print_results(const MeasureFlags& f, const run::MeasureSetup& setup,
                   const std::vector<run::StageMeasure>& results) {
  if (!f.json) {
    std::fputs(
        run::measurement_table(setup, results, f.per_rank || !f.all_stages, flag_of_field).c_str(),
        out());
    return;
  }
  if (results.size() == 1) {
    std::fprintf(out(), "%s\n", run::measure_json(setup, results[0]).dump(2).c_str());
    return;
  }
  nlohmann::json all = {{"stages", nlohmann::json::array()}};
  for (const run::StageMeasure& s : results) all["stages"].push_back(run::measure_json(setup, s));
  std::fprintf(out(), "%s\n", all.dump(2).c_str());
}

void run_measure(MeasureFlags f, bool stage_given) {
  if (f.all_stages && stage_given) {
    throw UsageError("--stage and --all-stages exclude each other: give one");
  }
  if (f.model.model == "mlp" && f.model.params.empty()) f.model.params = "10M";
  run::ModelSpec spec(f.model);
  run::Launch launch = launch_options(f.engine);
  zero::EngineOptions base = engine_options(f.engine, 8);
  // Refuses --threads the model cannot use.
  const int threads = run::model_threads(launch, spec.is_gpt(), base.micro_batch);
  const std::string compute_line = spec.resolve_compute(base.precision);
  // Under MPI, measure's own settings are the run's too: every rank must measure the same.
  for (const run::ConfigField& field : run::kConfigFields) {
    const nlohmann::json config = spec.config_json();
    launch.agree.emplace_back(field.name(),
                              config.contains(field.key) ? config.at(field.key).dump() : "(none)");
  }
  launch.agree.emplace_back("--data", spec.data_path() + " (" + spec.data_fingerprint() + ")",
                            spec.data_fingerprint());
  launch.agree.emplace_back("--steps", f.steps);
  launch.agree.emplace_back("--threads", std::to_string(threads));  // as auto settled it
  launch.agree.emplace_back("--all-stages", f.all_stages ? "given" : "not given");
  const int steps = static_cast<int>(units::parse_whole_in(f.steps, "--steps", 1, kMaxSteps));
  const predict::Link link = link_of(f.link);
  if (link.bits_per_second > 0 && launch.backend == "threads") {
    throw UsageError(
        "--link-rate: the threads backend's ranks share one process and no link; measure across "
        "hosts with --backend mpi (under mpirun, or scripts/cluster.sh)");
  }
  launch.agree.emplace_back("--link-rate", f.link.rate.empty() ? "(none)" : f.link.rate);
  launch.agree.emplace_back("--link-delay", f.link.delay.empty() ? "(none)" : f.link.delay);
  std::vector<Stage> stages = {base.stage};
  if (f.all_stages) stages.assign(kStages.begin(), kStages.end());
  for (Stage stage : stages) {
    zero::EngineOptions o = base;
    o.stage = stage;
    o.qwz = base.qwz && stage == Stage::zero3;  // ZeRO++ is stage 3's
    o.hpz = base.hpz && stage == Stage::zero3;
    o.qgz = base.qgz && stage == Stage::zero3;
    run::check_memory(
        {spec.param_count(), spec.activation_bytes(base.micro_batch), spec.size_field()}, o,
        launch);
  }
  run::configure_blas_threads(launch, threads);

  run::MeasureSetup setup;
  setup.params = spec.param_count();
  setup.model = spec.describe();
  setup.steps = steps;
  setup.micro_batch = base.micro_batch;
  setup.precision = std::string(dtype_name(base.precision));
  if (spec.is_gpt()) setup.compute = std::string(model::compute_name(spec.gpt().compute));
  setup.compute_line = compute_line;
  setup.threads = threads;
  setup.backend = launch.backend;
  setup.rss_per_process = launch.backend == "mpi";

  std::vector<run::StageMeasure> results;
  std::mutex mu;
  for (Stage stage : stages) {
    run::StageMeasure measured{stage, {}};
    // This stage's baseline and peak are its own, not the previous stage's.
    run::reset_process_peak();
    run::run_ranks(launch, [&](comm::Communicator& comm) {
      zero::EngineOptions o = base;
      o.stage = stage;
      o.qwz = base.qwz && stage == Stage::zero3;  // ZeRO++ is stage 3's
      o.hpz = base.hpz && stage == Stage::zero3;
      o.qgz = base.qgz && stage == Stage::zero3;
      run::RankMeasure mine;
      try {  // a budget refuses in the engine's setup or in the first step
        mine = run::measure_rank(comm, spec, launch, o, steps, link);
      } catch (const BudgetExceeded& e) {
        throw Error(failure_text(e) + "; --rank-memory: " +
                    run::fit_advice(run::engine_run(spec, o, launch, comm.size()), o.rank_memory,
                                    run::max_ranks_searched(launch)));
      }
      std::vector<run::RankMeasure> all = run::gather_ranks(comm, mine);
      if (comm.rank() != 0) return;
      std::lock_guard<std::mutex> lock(mu);
      setup.ranks = comm.size();
      setup.backend = std::string(comm.backend_name());
      measured.ranks = std::move(all);
    });
    if (!measured.ranks.empty()) results.push_back(std::move(measured));
  }
  if (results.empty()) return;  // an MPI rank other than 0
  print_results(f, setup, results);
}

void add_measure_command(CLI::App& root) {
  auto flags = std::make_shared<MeasureFlags>();
  CLI::App* app = root.add_subcommand(
      "measure", "Run a few steps and print what each rank holds and sends, beside the plan");
  flags->model.model = "mlp";
  add_model_flags(app, flags->model, "10M");
  app->add_option("--steps", flags->steps, "measured steps after one warm-up [3]");
  app->add_flag("--all-stages", flags->all_stages, "measure stages 0-3 side by side");
  app->add_flag("--per-rank", flags->per_rank, "print every rank, not only rank 0");
  app->add_flag("--json", flags->json, "print JSON instead of tables");
  app->add_option("--link-rate", flags->link.rate,
                  "the link between hosts (200Mbit/s, 1gbit, 12.5GB/s): adds the planner's "
                  "replay of the step on it [scripts/cluster.sh's --rate]");
  app->add_option("--link-delay", flags->link.delay,
                  "the link's one-way delay (250us, 2ms) [scripts/cluster.sh's --delay, else 0]");
  add_engine_flags(app, flags->engine);
  app->callback([flags, app] { run_measure(*flags, app->count("--stage") > 0); });
}

const bool measure_registered = register_command(20, add_measure_command);

}  // namespace
}  // namespace zerodp::cli
