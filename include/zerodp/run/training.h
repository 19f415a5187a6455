// A training run of zerodp's engine: its settings, the checks a resume must pass, and one
// rank's training loop (steps, validation, checkpoints, a graceful stop, the loss curve and the
// run's summary). `zerodp train` parses its flags into TrainSettings, launches the ranks
// (run/launch.h) and runs a Training on each; what it prints it learns through TrainObserver.
//
// Contract:
//  - TrainSettings holds values already checked (the flags' parsing is the caller's);
//    agreement() lists every setting the ranks must share, run_record() what a checkpoint
//    records (run/resume_rules.h compares it on resume).
//  - Training's members are collective: every rank calls them in the same order. The loss,
//    the weights and every checkpoint are the same whatever observer is given.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/run/agreement.h"
#include "zerodp/run/launch.h"
#include "zerodp/run/loss_curve.h"
#include "zerodp/run/model_spec.h"
#include "zerodp/zero/engine.h"

namespace zerodp::run {

struct TrainSettings {
  TrainSettings(ModelSpec spec_, zero::EngineOptions options_, Launch launch_)
      : spec(std::move(spec_)), options(options_), launch(std::move(launch_)) {}
  ModelSpec spec;
  zero::EngineOptions options;
  Launch launch;
  std::int64_t steps = 0, warmup = 0, eval_every = 0, log_every = 0, save_every = 0;
  std::uint64_t eval_batches = 0;
  float lr = 0;
  int keep = 0;
  std::string out;       // the folder for loss.csv and loss.svg; empty: no curve
  std::string save_dir;  // the folder for checkpoints; empty: none
  std::string resume;    // the checkpoint (or save folder) to resume; empty: a new run
  std::vector<std::string> resume_notes;  // what a resume changed (on_ranks()), for rank 0
  std::string compute_line;  // the products' compute and why (ModelSpec::resolve_compute())
  // Where the GPT's thread count came from, for the header: "--threads", "the checkpoint's",
  // or auto's rule.
  std::string threads_source;

  // The threads each rank's model computes on (run::model_threads, for this micro-batch):
  // InvalidArgument for a count the model cannot use.
  int threads() const { return model_threads(launch, spec.is_gpt(), options.micro_batch); }

  // The run's settings a checkpoint records.
  nlohmann::json run_record() const;
  // Every setting that shapes the run, for the ranks to agree on: the model and its data (by
  // its bytes, not its path), the engine, the schedule, validation, saving and resuming. Not
  // the curve's folder or the log's pace, which only rank 0 uses.
  RunSettings agreement() const;
  // These settings for one rank of `comm`: on resume, the checkpoint's global batch split over
  // comm.size() ranks (docs/checkpoints.md), after checking that every MPI rank resumes the
  // same checkpoint. Collective.
  TrainSettings on_ranks(comm::Communicator& comm, const checkpoint::Checkpoint* resume) const;
};

// Checks the checkpoint settings.resume names (opened by the caller, once for all the ranks of
// a process: opening checks every shard) against the run: what a resume may not change
// (run/resume_rules.h), the model config, and steps left to take. Throws InvalidArgument.
void check_resume(const TrainSettings& settings, const checkpoint::Checkpoint& checkpoint);

// Mean loss over `batches` micro-batches of held-out data, on every rank (collective).
float validation_loss(zero::Engine& engine, const data::SampleSource& samples, int rank, int ranks,
                      std::size_t micro_batch, std::uint64_t batches);

// What a run tells the one who watches it (rank 0's), as it happens.
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void resumed(const checkpoint::Checkpoint& checkpoint) = 0;
  // After step `step`: its result, the rate so far (tokens or samples per second) and the
  // seconds the remaining steps will take at that rate.
  virtual void stepped(std::int64_t step, const zero::StepResult& result, double rate,
                       double seconds_left) = 0;
  virtual void validated(std::int64_t step, float loss) = 0;
  virtual void saved(const std::string& folder) = 0;
  virtual void stepping_ended() = 0;  // no more steps: the last was taken, or a stop
};

// One rank's run: its engine, the training loop, and its summary.
class Training {
 public:
  // `observer`: told what happens (rank 0's, or none).
  Training(const TrainSettings& settings, comm::Communicator& comm, TrainObserver* observer);

  // Continues from `checkpoint` (checked by check_resume()).
  void resume_from(const checkpoint::Checkpoint& checkpoint);
  // Steps to settings.steps, or until a stop signal (run/stop_signal.h) reached any rank.
  // A run that diverges ends with ErrorOnEveryRank naming the step, nothing of that step or
  // later saved: a training or validation loss that is not finite, weights that are not when a
  // checkpoint is due, a gradient norm that is not finite without a loss scale to lower
  // (bf16), or, with fp16, kMaxSkipsAtMinScale steps skipped in a row at the smallest scale.
  void train();
  static constexpr int kMaxSkipsAtMinScale = 10;
  // The run's summary (rank 0; a null object on the others), after writing the loss curve to
  // settings.out: "model", "params", "stage", "ranks", "backend", "steps", "first_loss",
  // "final_loss", "val_loss", "tokens_per_second", "seconds", "exposed_comm_seconds",
  // "predicted_model_state_bytes", "model_state_bytes", "peak_bytes", "predicted_peak_bytes",
  // "per_rank", "activation_bytes", "weights_sha256", "curve_csv" and "curve_svg" when written,
  // and "stopped" ({"signal", "step", "checkpoint", "exit_status"}) after a stop.
  nlohmann::json finish();
  // The signal that stopped the run before its last step (the same on every rank), or 0.
  int stopped_by() const { return stopped_by_; }
  // Tokens (the MLP: samples) all ranks consume in one optimizer step.
  std::uint64_t tokens_per_step() const { return tokens_per_step_; }

 private:
  void after_step(std::int64_t t);
  void check_finite(std::int64_t t);
  [[noreturn]] void diverged(const std::string& where) const;
  void validate(std::int64_t t);
  void save(std::int64_t t);
  void stop(std::int64_t t);

  const TrainSettings& s_;
  comm::Communicator& comm_;
  TrainObserver* const observer_;
  const bool leader_;
  std::unique_ptr<model::Model> model_;
  zero::Engine engine_;
  const std::uint64_t tokens_per_step_;
  LossCurve curve_;
  std::int64_t first_step_ = 1;
  zero::StepResult last_;
  double seconds_ = 0, exposed_ = 0;
  float first_loss_ = 0, last_val_ = NAN;        // NAN: no validation yet
  std::int64_t last_step_ = 0, saved_step_ = 0;  // the last step taken, and saved
  std::string saved_folder_;                     // the checkpoint saved at saved_step_
  int stopped_by_ = 0;
  int skips_at_min_scale_ = 0;  // fp16: steps skipped in a row at the smallest loss scale
};

// Why a run whose step gave `step` has diverged, or empty when it has not: a loss that is not
// finite (any precision); a gradient norm that is not finite, or a skipped step, without a
// loss scale to lower (bf16); with fp16, the kMaxSkipsAtMinScale-th step in a row skipped at
// a scale at or below `min_scale`. `skips_at_min_scale` carries that count from step to step.
std::string divergence(const zero::StepResult& step, DType precision, float min_scale,
                       int& skips_at_min_scale);

}  // namespace zerodp::run
