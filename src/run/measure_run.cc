// run::Measurement: `zerodp measure`'s settings checked once and its stages run on the ranks.
#include <mutex>

#include "zerodp/common/error.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/common/units.h"
#include "zerodp/optim/rule.h"
#include "zerodp/run/engine_run.h"
#include "zerodp/run/measurement.h"

namespace zerodp::run {
namespace {

ModelSpec spec_of(ModelChoice model) {
  if (model.model == "mlp" && model.params.empty()) model.params = "10M";
  return ModelSpec(model);
}

// The link between hosts, for the planner's replay of the step; rate 0 when none is given.
predict::Link link_of(const MeasureChoice& f) {
  predict::Link link;
  if (!f.link_delay.empty() && f.link_rate.empty()) {
    throw InvalidArgument("link_delay", field_ref("link_delay") + " needs " +
                                            field_ref("link_rate") +
                                            ": the replay of a step needs the link's rate");
  }
  if (!f.link_rate.empty()) {
    link.bits_per_second = 8.0 * units::parse_bandwidth(f.link_rate, field_ref("link_rate"));
  }
  if (!f.link_delay.empty()) {
    link.delay_seconds = units::parse_seconds_in(f.link_delay, field_ref("link_delay"), 0, 60);
  }
  return link;
}

// "fp32 master and AdamW's m (first moment) and v (second moment)": the state the row keeps
// (the engine runs the Adam row as AdamW).
std::string state_words(const OptimizerRow& row) {
  const std::string name = row.id == Optimizer::adam ? "AdamW" : std::string(row.described);
  if (row.slots.empty()) return "fp32 master (" + name + " keeps no state)";
  std::string words = "fp32 master and " + name + "'s ";
  for (std::size_t i = 0; i < row.slots.size(); ++i) {
    if (i > 0) words += " and ";
    words += std::string(row.slots[i].holds);
  }
  return words;
}

}  // namespace

Measurement::Measurement(const MeasureChoice& f)
    : spec_(spec_of(f.model)),
      launch_(launch_options(f.engine)),
      base_(engine_options(f.engine, 8)) {
  base_.frozen_nf4 = spec_.nf4();
  base_.frozen_double_quant = spec_.double_quant();
  if (f.all_stages && f.stage_given) {
    throw InvalidArgument("all_stages", field_ref("stage") + " and " + field_ref("all_stages") +
                                            " exclude each other: give one");
  }
  // Refuses threads the model cannot use.
  threads_ = model_threads(launch_, spec_.is_gpt(), base_.micro_batch);
  setup_.compute_line = spec_.resolve_compute(base_.precision);
  steps_ =
      static_cast<int>(units::parse_whole_in(f.steps, field_ref("steps"), 1, kMaxMeasuredSteps));
  link_ = link_of(f);
  if (link_.bits_per_second > 0 && launch_.backend == "threads") {
    throw InvalidArgument(
        "link_rate", field_ref("link_rate") +
                         ": the threads backend's ranks share one process and no link; measure "
                         "across hosts with " +
                         field_ref("backend") + " mpi (under mpirun, or scripts/cluster.sh)");
  }
  agree(f);
  stages_ = {base_.stage};
  if (f.all_stages) stages_.assign(kStages.begin(), kStages.end());
  for (Stage stage : stages_) {
    check_memory({spec_.param_count(), spec_.activation_bytes(base_.micro_batch),
                  spec_.size_field(), spec_.frozen_param_count()},
                 at_stage(stage), launch_);
  }
  setup_.params = spec_.param_count();
  setup_.model = spec_.describe();
  setup_.steps = steps_;
  setup_.micro_batch = base_.micro_batch;
  setup_.precision = std::string(dtype_name(base_.precision));
  setup_.state_words = state_words(*base_.rule().row);
  setup_.blockwise = base_.rule().blockwise();
  setup_.factored = base_.rule().factored();
  setup_.bpp = engine_bytes_per_param(base_);
  if (spec_.is_gpt()) setup_.compute = std::string(model::compute_name(spec_.gpt().compute));
  setup_.threads = threads_;
  setup_.backend = launch_.backend;
  setup_.rss_per_process = launch_.backend == "mpi";
}

void Measurement::agree(const MeasureChoice& f) {
  // Under MPI, measure's own settings are the run's too: every rank must measure the same.
  const nlohmann::json config = spec_.config_json();
  for (const ConfigField& field : kConfigFields) {
    launch_.agree.emplace_back(field.name(),
                               config.contains(field.key) ? config.at(field.key).dump() : "(none)");
  }
  launch_.agree.emplace_back(field_ref("data"),
                             spec_.data_path() + " (" + spec_.data_fingerprint() + ")",
                             spec_.data_fingerprint());
  launch_.agree.emplace_back(field_ref("steps"), f.steps);
  launch_.agree.emplace_back(field_ref("threads"), std::to_string(threads_));  // as auto settled
  launch_.agree.emplace_back(field_ref("all_stages"), f.all_stages ? "given" : "not given");
  launch_.agree.emplace_back(field_ref("link_rate"), f.link_rate.empty() ? "(none)" : f.link_rate);
  launch_.agree.emplace_back(field_ref("link_delay"),
                             f.link_delay.empty() ? "(none)" : f.link_delay);
}

zero::EngineOptions Measurement::at_stage(Stage stage) const {
  zero::EngineOptions o = base_;
  o.stage = stage;
  // ZeRO++ is stage 3's (zeropp_stage_refusal): the other stages are measured without it.
  if (!zeropp_stage_refusal(base_.zeropp, stage).empty()) o.zeropp = {};
  return o;
}

std::vector<StageMeasure> Measurement::run() {
  configure_blas_threads(launch_, threads_);
  std::vector<StageMeasure> results;
  std::mutex mu;
  for (Stage stage : stages_) {
    StageMeasure measured{stage, {}};
    // This stage's baseline and peak are its own, not the previous stage's.
    reset_process_peak();
    run_ranks(launch_, [&](comm::Communicator& comm) {
      const zero::EngineOptions o = at_stage(stage);
      RankMeasure mine;
      try {  // a budget refuses in the engine's setup or in the first step
        mine = measure_rank(comm, spec_, launch_, o, steps_, link_);
      } catch (const BudgetExceeded& e) {
        throw Error(failure_text(e) + "; " + field_ref("rank_memory") + ": " +
                    fit_advice(engine_run(spec_, o, launch_, comm.size()), o.rank_memory,
                               max_ranks_searched(launch_)));
      }
      std::vector<RankMeasure> all = gather_ranks(comm, mine);
      if (comm.rank() != 0) return;
      std::lock_guard<std::mutex> lock(mu);
      setup_.ranks = comm.size();
      setup_.backend = std::string(comm.backend_name());
      measured.ranks = std::move(all);
    });
    if (!measured.ranks.empty()) results.push_back(std::move(measured));
  }
  return results;
}

}  // namespace zerodp::run
