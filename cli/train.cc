// zerodp train: trains a model (the byte-level GPT by default) with ZeRO stage 0-3 on N ranks,
// with progress, validation, a loss curve and a summary of predicted against measured memory.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "checkpoint_model.h"
#include "command.h"
#include "engine_flags.h"
#include "loss_curve.h"
#include "peak_report.h"
#include "progress.h"
#include "resume_rules.h"
#include "run_agreement.h"
#include "stop_signal.h"
#include "train_model.h"
#include "zerodp/checkpoint.h"
#include "zerodp/error.h"
#include "zerodp/optim.h"
#include "zerodp/plan_memory.h"
#include "zerodp/units.h"

namespace zerodp::cli {
namespace {

struct TrainFlags {
  EngineFlags engine;
  ModelFlags model;
  std::string steps = "200";
  std::string lr = "2e-3";
  std::string warmup;  // default: a tenth of the steps, at most 50
  std::string eval_every;
  std::string eval_batches = "4";
  std::string log_every = "10";
  std::string out = "out";
  std::string save_dir, save_every, keep = "2", resume;
  bool json = false;
  bool dry_run = false;
};

// Mean loss over `batches` micro-batches of held-out data, on every rank.
float validation_loss(Engine& engine, const data::SampleSource& samples, int rank, int ranks,
                      std::size_t micro_batch, std::uint64_t batches) {
  data::Batch batch;
  double sum = 0;
  for (std::uint64_t j = 0; j < batches; ++j) {
    const std::uint64_t first = (j * std::uint64_t(ranks) + std::uint64_t(rank)) * micro_batch;
    samples.draw(data::Split::validation, first, micro_batch, batch);
    sum += engine.evaluate(micro_batch_of(batch));
  }
  return float(sum / double(batches));
}

// The run's settings, parsed and checked once, before any rank starts.
struct TrainSettings {
  explicit TrainSettings(const TrainFlags& f);
  ModelSpec spec;
  EngineOptions options;
  Launch launch;
  std::int64_t steps = 0, warmup = 0, eval_every = 0, log_every = 0, save_every = 0;
  std::uint64_t eval_batches = 0;
  float lr = 0;
  int keep = 0;
  nlohmann::json run_record;              // the run's settings a checkpoint records
  std::vector<std::string> resume_notes;  // what a resume changed (on_ranks()), for rank 0

  // These settings for one rank of `comm`: on resume, the checkpoint's global batch split over
  // comm.size() ranks (docs/checkpoints.md), after checking that every MPI rank resumes the
  // same checkpoint.
  TrainSettings on_ranks(comm::Communicator& comm, const checkpoint::Checkpoint* resume) const;
};

// Every setting that shapes the run, for the ranks to agree on: the model and its data (by its
// bytes, not its path), the engine, the schedule, validation, saving and resuming. Not --out,
// --log-every or --json, which only rank 0 uses.
RunSettings agreement(const TrainFlags& f, const TrainSettings& s) {
  RunSettings out;
  const nlohmann::json config = s.spec.config_json();
  // Every field on every rank, "(none)" where this model has no such field, so that ranks
  // training different models still compare the same list (and name --model).
  for (const ConfigField& field : kConfigFields) {
    out.push_back(
        {field.flag, config.contains(field.key) ? config.at(field.key).dump() : "(none)"});
  }
  out.push_back({"--data", s.spec.data_path() + " (" + s.spec.data_fingerprint() + ")",
                 s.spec.data_fingerprint()});
  const EngineOptions& o = s.options;
  auto text = [](const nlohmann::json& v) { return v.dump(); };
  // A real number is shown short (2e-3, not 0.0020000000949949026) and compared in full.
  auto real = [](const char* flag, float v) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", double(v));
    return RunSetting(flag, shown, nlohmann::json(v).dump());
  };
  for (RunSetting setting : std::initializer_list<RunSetting>{
           {"--stage", text(stage_number(o.stage))},
           {"--precision", std::string(dtype_name(o.precision))},
           {"--bucket-bytes", text(o.bucket_bytes)},
           {"--micro-batch", text(o.micro_batch)},
           {"--grad-accum", text(o.grad_accum)},
           real("--clip", o.clip_norm),
           {"--seed", text(o.seed)},
           {"--no-prefetch", o.prefetch ? "off" : "on"},
           {"--no-overlap", o.overlap ? "off" : "on"},
           {"--rank-memory", text(o.rank_memory)},
           {"--timeout", text(s.launch.options.timeout.count()) + " ms"},
           {"--steps", text(s.steps)},
           real("--lr", s.lr),
           {"--warmup", text(s.warmup)},
           {"--eval-every", text(s.eval_every)},
           {"--eval-batches", text(s.eval_batches)},
           {"--save-dir", f.save_dir},
           {"--save-every", text(s.save_every)},
           {"--keep", text(s.keep)},
           {"--resume", f.resume}}) {
    out.push_back(std::move(setting));
  }
  return out;
}

TrainSettings::TrainSettings(const TrainFlags& f)
    : spec(f.model), options(engine_options(f.engine, 8)), launch(launch_options(f.engine)) {
  // Step counts: checkpoint folders are named step-%08d and found in name order, so a step
  // has at most 8 digits (and 99,999,999 steps is years of training).
  constexpr std::uint64_t kSteps = 99'999'999;
  steps = static_cast<std::int64_t>(units::parse_whole_in(f.steps, "--steps", 1, kSteps));
  warmup = static_cast<std::int64_t>(f.warmup.empty()
                                         ? std::min<std::int64_t>(50, steps / 10)
                                         : units::parse_whole_in(f.warmup, "--warmup", 0, kSteps));
  eval_every = static_cast<std::int64_t>(
      f.eval_every.empty() ? std::max<std::int64_t>(1, steps / 10)
                           : units::parse_whole_in(f.eval_every, "--eval-every", 0, kSteps));
  eval_batches = units::parse_whole_in(f.eval_batches, "--eval-batches", 0, 1'000'000);
  log_every =
      static_cast<std::int64_t>(units::parse_whole_in(f.log_every, "--log-every", 1, kSteps));
  lr = static_cast<float>(
      parse_real(f.lr, "--lr", "a positive number such as 3e-4", /*zero_allowed=*/false));
  save_every = static_cast<std::int64_t>(
      f.save_every.empty() ? 0 : units::parse_whole_in(f.save_every, "--save-every", 1, kSteps));
  keep = static_cast<int>(units::parse_whole_in(f.keep, "--keep", 1, 1'000'000));
  if (save_every > 0 && f.save_dir.empty()) {
    throw UsageError("--save-every: needs --save-dir DIR, the folder to save checkpoints in");
  }
  run_record = {{"lr", lr},
                {"warmup", warmup},
                {"steps", steps},
                {"seed", options.seed},
                {"clip", options.clip_norm},
                {"grad_accum", options.grad_accum},
                {"micro_batch", options.micro_batch},
                {"precision", std::string(dtype_name(options.precision))},
                {"data", spec.data_path()},
                {"data_fingerprint", spec.data_fingerprint()},
                {"data_seed", spec.data_seed()},
                {"eval_every", eval_every},
                {"eval_batches", eval_batches}};
  launch.agree = agreement(f, *this);
}

TrainSettings TrainSettings::on_ranks(comm::Communicator& comm,
                                      const checkpoint::Checkpoint* resume) const {
  TrainSettings mine = *this;
  if (resume == nullptr) return mine;
  if (launch.backend == "mpi") {
    check_ranks_agree(comm,
                      {{"the checkpoint to resume",
                        resume->folder() + " at step " + std::to_string(resume->state().step)}});
  }
  ResumePlan plan;
  try {  // the same checkpoint and settings on every rank: the same answer
    plan = plan_resume(resume->folder(), nlohmann::json::parse(resume->manifest().run),
                       resume->manifest().ranks, run_record, comm.size());
  } catch (const UsageError& e) {
    throw UsageErrorOnEveryRank(e.what());
  }
  mine.options.micro_batch = plan.micro_batch;
  mine.options.grad_accum = plan.grad_accum;
  mine.run_record["micro_batch"] = plan.micro_batch;
  mine.run_record["grad_accum"] = plan.grad_accum;
  mine.resume_notes = plan.notes;
  return mine;
}

// The checkpoint --resume names, opened once for all the ranks of this process (it checks
// every shard), and checked against the run.
std::optional<checkpoint::Checkpoint> open_resume(const TrainFlags& f, const TrainSettings& s) {
  if (f.resume.empty()) return std::nullopt;
  std::optional<checkpoint::Checkpoint> resume(checkpoint::Checkpoint::open(f.resume));
  refuse_resume_changes(resume->folder(), nlohmann::json::parse(resume->manifest().run),
                        nlohmann::json::parse(resume->manifest().model), s.spec.config_json(),
                        s.run_record);
  resume->check_model(s.spec.config_json().dump());
  if (resume->state().step >= s.steps) {
    const std::string done = std::to_string(resume->state().step);
    throw UsageError("--steps: " + quote(resume->folder()) + " has done " + done +
                     " steps already and --steps " + std::to_string(s.steps) +
                     " asks for no more; give --steps above " + done + " to continue");
  }
  return resume;
}

// One rank's run: its engine, the training loop, and what rank 0 prints and records.
class RankRun {
 public:
  RankRun(const TrainFlags& f, const TrainSettings& s, comm::Communicator& comm)
      : f_(f),
        s_(s),
        comm_(comm),
        leader_(comm.rank() == 0),
        talk_(leader_ && !f.json),
        model_(s.spec.make()),
        engine_(*model_, comm, s.spec.samples(), s.options),
        tokens_per_step_(std::uint64_t(comm.size()) * s.options.micro_batch *
                         std::uint64_t(s.options.grad_accum) * s.spec.tokens_per_sample()),
        progress_(s.steps, s.log_every, s.spec.is_gpt() ? "tok/s" : "samples/s") {}

  void print_header() const;
  void resume_from(const checkpoint::Checkpoint& ck);
  void train();
  // The run's summary (rank 0; a null object on the others), after writing the loss curve.
  nlohmann::json finish();
  // The signal that stopped the run before its last step (the same on every rank), or 0.
  int stopped_by() const { return stopped_by_; }

 private:
  void after_step(std::int64_t t);
  void validate(std::int64_t t);
  void save(std::int64_t t);
  void stop(std::int64_t t);

  const TrainFlags& f_;
  const TrainSettings& s_;
  comm::Communicator& comm_;
  const bool leader_, talk_;  // talk_: rank 0 prints a log (not --json)
  std::unique_ptr<model::Model> model_;
  Engine engine_;
  const std::uint64_t tokens_per_step_;
  Progress progress_;
  LossCurve curve_;
  std::int64_t first_step_ = 1;
  StepResult last_;
  double seconds_ = 0, exposed_ = 0;
  float first_loss_ = 0, last_val_ = NAN;
  std::int64_t last_step_ = 0, saved_step_ = 0;  // the last step taken, and saved
  std::string saved_folder_;                     // the checkpoint saved at saved_step_
  int stopped_by_ = 0;
};

void RankRun::print_header() const {
  if (!talk_) return;
  const ModelSpec& spec = s_.spec;
  const EngineOptions& o = s_.options;
  std::printf("zerodp train: %s\n", spec.describe().c_str());
  if (spec.is_gpt()) std::printf("data: %s\n", spec.data()->describe().c_str());
  std::printf(
      "ZeRO stage %d on %d ranks (%s), %s; micro-batch %zu x %d per rank, %llu "
      "tokens per step; lr %g, warm-up %lld, cosine to %lld steps\n",
      stage_number(o.stage), comm_.size(), std::string(comm_.backend_name()).c_str(),
      std::string(dtype_name(o.precision)).c_str(), o.micro_batch, o.grad_accum,
      (unsigned long long)tokens_per_step_, s_.lr, (long long)s_.warmup, (long long)s_.steps);
  for (const std::string& note : s_.resume_notes) std::printf("%s\n", note.c_str());
}

void RankRun::resume_from(const checkpoint::Checkpoint& ck) {
  engine_.import_state(ck.reader(), ck.state());
  first_step_ = ck.state().step + 1;
  if (talk_) {
    progress_.note("resumed from " + printable(ck.folder()) + " (saved by " +
                   std::to_string(ck.manifest().ranks) + " ranks at stage " +
                   std::to_string(ck.manifest().stage) + ")");
  }
}

void RankRun::train() {
  curve_.title = "zerodp: " + std::string(s_.spec.is_gpt() ? "byte-level GPT" : "MLP") + ", " +
                 units::format_count(s_.spec.param_count()) + " parameters, ZeRO-" +
                 std::to_string(stage_number(s_.options.stage)) + " on " +
                 std::to_string(comm_.size()) + " ranks";
  // A resumed run continues the curve of the run it resumes, as far as its checkpoint.
  if (leader_ && first_step_ > 1 && !f_.out.empty()) {
    curve_.load_csv_before(f_.out + "/loss.csv", first_step_);
  }
  const auto stop_requested = [] { return stop_signal::received() != 0; };
  for (std::int64_t t = first_step_; t <= s_.steps; ++t) {
    last_ = engine_.step(optim::lr_at(t, s_.steps, s_.warmup, s_.lr), stop_requested);
    if (t == first_step_) first_loss_ = last_.loss;
    seconds_ += last_.seconds;
    exposed_ += last_.exposed_comm_seconds;
    curve_.train.emplace_back(t, last_.loss);
    last_step_ = t;
    after_step(t);
    if (last_.stop_requested && t < s_.steps) {  // at the last step, the run is complete
      stop(t);
      break;
    }
  }
  if (talk_) progress_.finish();
}

void RankRun::after_step(std::int64_t t) {
  const double done = double(t - first_step_ + 1);
  const double rate = double(tokens_per_step_) * done / seconds_;
  if (talk_)
    progress_.step(t, last_.loss, rate, seconds_ / done * double(s_.steps - t), last_.skipped);
  if (s_.eval_batches > 0 && s_.eval_every > 0 && (t % s_.eval_every == 0 || t == s_.steps)) {
    validate(t);
  }
  // --save-dir alone saves at the end; --save-every K also every K steps.
  if (t == s_.steps || (s_.save_every > 0 && t % s_.save_every == 0)) save(t);
}

// A checkpoint of step t under --save-dir (collective), unless there is no --save-dir or step
// t is saved already.
void RankRun::save(std::int64_t t) {
  if (f_.save_dir.empty() || saved_step_ == t) return;
  saved_folder_ = checkpoint::save(f_.save_dir, engine_, comm_, s_.spec.config_json().dump(),
                                   s_.run_record.dump(), s_.keep);
  saved_step_ = t;
  if (talk_) progress_.note("saved " + printable(saved_folder_));
}

// Every rank agreed to stop after step t (a signal reached one of them): save where the run
// can resume, unless this step was just saved. finish() writes the curve and says where.
void RankRun::stop(std::int64_t t) {
  // Every rank ends with one status: SIGTERM if any rank received it (the scheduler's), else
  // SIGINT if any did; a rank the signal did not reach takes the others'. One small
  // all-reduce, on a stop only.
  const int mine = stop_signal::received();
  float which[2] = {mine == SIGINT ? 1.0f : 0.0f, mine == SIGTERM ? 1.0f : 0.0f};
  comm_.all_reduce(which, 2, DType::f32);
  stopped_by_ = which[1] > 0.0f || which[0] == 0.0f ? SIGTERM : SIGINT;
  save(t);
}

void RankRun::validate(std::int64_t t) {
  last_val_ = validation_loss(engine_, s_.spec.samples(), comm_.rank(), comm_.size(),
                              s_.options.micro_batch, s_.eval_batches);
  curve_.validation.emplace_back(t, last_val_);
  if (talk_) {
    char line[128];
    std::snprintf(line, sizeof line, "step %lld/%lld  validation loss %.4f", (long long)t,
                  (long long)s_.steps, last_val_);
    progress_.note(line);
  }
}

nlohmann::json RankRun::finish() {
  const std::string weights_sha256 = engine_.weights_sha256();  // collective: every rank
  const std::vector<std::uint64_t> peaks = gather_words(comm_, {engine_.ledger().peak_total()});
  if (!leader_) return nullptr;
  const ModelSpec& spec = s_.spec;
  const int ranks = comm_.size();
  const std::uint64_t predicted = plan::model_state_bytes(
      spec.param_count(), ranks, s_.options.stage, plan::BytesPerParam{2, 2, 12});
  const Ledger& ledger = engine_.ledger();
  const plan::EngineRun planned = engine_run(spec, s_.options, s_.launch, ranks);
  nlohmann::json per_rank = nlohmann::json::array();
  for (int r = 0; r < ranks; ++r) {
    per_rank.push_back({{"rank", r},
                        {"peak_bytes", peaks[r]},
                        {"predicted_peak_bytes", plan::predict_rank_peak(planned, r).peak_bytes}});
  }
  nlohmann::json j = {
      {"model", spec.config_json()},
      {"params", spec.param_count()},
      {"stage", stage_number(s_.options.stage)},
      {"ranks", ranks},
      {"backend", comm_.backend_name()},
      {"steps", s_.steps},
      {"first_loss", first_loss_},
      {"final_loss", last_.loss},
      {"val_loss", std::isfinite(last_val_) ? nlohmann::json(last_val_) : nlohmann::json()},
      {"tokens_per_second",
       double(tokens_per_step_) * double(last_step_ - first_step_ + 1) / seconds_},
      {"seconds", seconds_},
      {"exposed_comm_seconds", exposed_},
      {"predicted_model_state_bytes", predicted},
      {"model_state_bytes", ledger.model_state_bytes()},
      {"peak_bytes", ledger.peak_total()},
      {"predicted_peak_bytes", per_rank[0]["predicted_peak_bytes"]},
      {"per_rank", per_rank},
      {"activation_bytes", ledger.peak(Category::activations)},
      {"weights_sha256", weights_sha256}};
  if (!f_.out.empty()) {
    curve_.write_csv(f_.out + "/loss.csv");
    curve_.write_svg(f_.out + "/loss.svg");
    j["curve_csv"] = f_.out + "/loss.csv";
    j["curve_svg"] = f_.out + "/loss.svg";
  }
  if (stopped_by_ != 0) {
    j["stopped"] = {
        {"signal", stop_signal::name(stopped_by_)},
        {"step", last_step_},
        {"checkpoint", saved_step_ == last_step_ ? nlohmann::json(saved_folder_) : nullptr},
        {"exit_status", stop_signal::exit_status(stopped_by_)}};
  }
  return j;
}

// The one line that says where a stopped run left everything it needs to continue.
std::string stop_line(const TrainFlags& f, const nlohmann::json& j) {
  const nlohmann::json& stop = j["stopped"];
  std::string line = "zerodp: stopped by " + stop["signal"].get<std::string>() + " after step " +
                     std::to_string(stop["step"].get<std::int64_t>()) + " of " +
                     std::to_string(j["steps"].get<std::int64_t>()) + "; ";
  if (!stop["checkpoint"].is_null()) {
    line += "checkpoint " + printable(stop["checkpoint"].get<std::string>()) +
            " (continue with --resume " + printable(f.save_dir) + ")";
  } else {
    line += "no checkpoint (no --save-dir)";
  }
  if (j.contains("curve_csv")) {
    line += "; loss curve " + printable(j["curve_csv"].get<std::string>()) + ", " +
            printable(j["curve_svg"].get<std::string>());
  } else {
    line += "; no loss curve (--out '')";
  }
  return line;
}

// The summary for people, from the JSON summary.
void print_summary(const ModelSpec& spec, const nlohmann::json& j) {
  auto bytes = [](const nlohmann::json& v) { return units::format_bytes(v.get<std::uint64_t>()); };
  std::printf("\nSummary\n");
  std::printf("  model          %s\n", spec.describe().c_str());
  std::printf("  stage, ranks   ZeRO-%d on %d ranks (%s)\n", j["stage"].get<int>(),
              j["ranks"].get<int>(), j["backend"].get<std::string>().c_str());
  std::printf("  loss           %.4f -> %.4f (train)", j["first_loss"].get<double>(),
              j["final_loss"].get<double>());
  if (!j["val_loss"].is_null()) std::printf(", %.4f (validation)", j["val_loss"].get<double>());
  // The MLP's samples are one "token" each: its rate is in samples.
  std::printf("\n  speed          %s %s over %s\n",
              format_rate(j["tokens_per_second"].get<double>()).c_str(),
              spec.is_gpt() ? "tokens/s" : "samples/s",
              format_duration(j["seconds"].get<double>()).c_str());
  std::printf("  model state    %s per rank predicted, %s measured (rank 0)\n",
              bytes(j["predicted_model_state_bytes"]).c_str(),
              bytes(j["model_state_bytes"]).c_str());
  std::printf("  peak per rank  %s measured (ledger), %s predicted; activations %s\n",
              bytes(j["peak_bytes"]).c_str(), bytes(j["predicted_peak_bytes"]).c_str(),
              bytes(j["activation_bytes"]).c_str());
  const nlohmann::json& ranks = j["per_rank"];
  for (std::size_t r = 1; r < ranks.size() && r < 8; ++r) {
    std::printf("    rank %-8zu %s measured, %s predicted\n", r,
                bytes(ranks[r]["peak_bytes"]).c_str(),
                bytes(ranks[r]["predicted_peak_bytes"]).c_str());
  }
  if (ranks.size() > 8) std::printf("    (every rank in --json)\n");
  std::printf("  exposed comm   %.2f s of %.2f s (%.1f %%)\n",
              j["exposed_comm_seconds"].get<double>(), j["seconds"].get<double>(),
              100.0 * j["exposed_comm_seconds"].get<double>() / j["seconds"].get<double>());
  std::printf("  weights        sha256 %s\n", j["weights_sha256"].get<std::string>().c_str());
  if (j.contains("curve_svg")) {
    std::printf("  loss curve     %s, %s\n", printable(j["curve_csv"].get<std::string>()).c_str(),
                printable(j["curve_svg"].get<std::string>()).c_str());
  }
}

// Rank 0's report: the summary, and where a stopped run left its checkpoint and curve (on
// stderr with --json, so stdout stays one JSON object).
void report(const TrainFlags& f, const TrainSettings& settings, const nlohmann::json& summary) {
  if (f.json) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    print_summary(settings.spec, summary);
  }
  if (summary.contains("stopped")) {
    std::fprintf(f.json ? stderr : stdout, "%s\n", stop_line(f, summary).c_str());
  }
}

// --dry-run: the planner's peak for exactly this run, and the verdict for --rank-memory,
// before anything is allocated. Under mpirun, rank 0 prints.
void dry_run(const TrainFlags& f, const TrainSettings& settings) {
  if (!f.resume.empty()) {
    throw UsageError("--dry-run: plans a new run; give the resumed run's flags without --resume");
  }
  const Launch& launch = settings.launch;
  const plan::EngineRun run =
      engine_run(settings.spec, settings.options, launch, planned_ranks(launch));
  const char* world_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (launch.backend == "mpi" && world_rank && std::atol(world_rank) != 0) return;
  const std::uint64_t budget = settings.options.rank_memory;
  if (f.json) {
    nlohmann::json j = {{"model", settings.spec.config_json()},
                        {"params", settings.spec.param_count()},
                        {"stage", stage_number(run.stage)},
                        {"ranks", run.ranks},
                        {"backend", launch.backend},
                        {"micro_batch", run.micro_batch},
                        {"grad_accum", run.grad_accum},
                        {"bucket_bytes", run.bucket_bytes},
                        {"prefetch", run.prefetch}};
    j.update(peak_json(run, budget, max_ranks_searched(launch)));
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_peak(settings.spec.describe(), run, budget, max_ranks_searched(launch));
  }
}

void run_train(const TrainFlags& f) {
  const TrainSettings settings(f);
  if (f.dry_run) {
    dry_run(f, settings);
    return;
  }
  check_memory(
      {settings.spec.param_count(), settings.spec.activation_bytes(settings.options.micro_batch),
       settings.spec.size_flag()},
      settings.options, settings.launch);
  if (!f.out.empty()) std::filesystem::create_directories(f.out);
  stop_signal::install();  // from here on, SIGTERM and SIGINT stop at a step boundary
  configure_blas_threads(settings.launch);
  const std::optional<checkpoint::Checkpoint> resume = open_resume(f, settings);
  // Held until the run ends: the folder's lock and the run id its manifests record.
  std::optional<checkpoint::SaveDir> save_dir =
      claim_save_dir(f.save_dir, settings.launch.backend == "mpi", resume ? &*resume : nullptr);
  int stopped_by = 0;  // the same on every rank
  std::mutex mu;
  run_ranks(settings.launch, [&](comm::Communicator& comm) {
    const TrainSettings here = settings.on_ranks(comm, resume ? &*resume : nullptr);
    // Every check has passed on every rank: only now may a rewind move checkpoints aside (a
    // refused run leaves the folder as it found it). The claim lives in rank 0's process.
    if (save_dir && comm.rank() == 0) {
      const std::string note = save_dir->set_aside_superseded();
      if (!note.empty()) std::fprintf(f.json ? stderr : stdout, "%s\n", note.c_str());
    }
    std::optional<RankRun> run_here;
    try {  // a budget refuses in the engine's setup or in the first step
      run_here.emplace(f, here, comm);
      run_here->print_header();
      if (resume) run_here->resume_from(*resume);
      run_here->train();
    } catch (const BudgetExceeded& e) {
      throw Error(std::string(e.what()) + "; --rank-memory: " +
                  fit_advice(engine_run(here.spec, here.options, here.launch, comm.size()),
                             here.options.rank_memory, max_ranks_searched(here.launch)));
    }
    RankRun& run = *run_here;
    const nlohmann::json summary = run.finish();
    if (!summary.is_null()) report(f, settings, summary);  // null: a rank other than 0
    if (run.stopped_by() != 0) {
      // mpirun ends the whole job as soon as one process exits with an error status: rank 0
      // must have reported before any rank exits with 143.
      std::fflush(nullptr);
      comm.barrier();
      stop_signal::ending();
    }
    std::lock_guard<std::mutex> lock(mu);
    stopped_by = run.stopped_by();
  });
  if (stopped_by != 0) {
    std::fflush(nullptr);
    std::exit(stop_signal::exit_status(stopped_by));  // every rank, as a scheduler expects
  }
}

void add_train_command(CLI::App& root) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* app = root.add_subcommand("train", "Train a model with ZeRO stage 0-3 on N ranks");
  add_model_flags(app, flags->model);
  app->add_option("--steps", flags->steps, "optimizer steps [200]");
  app->add_option("--lr", flags->lr, "peak learning rate [2e-3]");
  app->add_option("--warmup", flags->warmup, "linear warm-up steps [steps/10, at most 50]");
  app->add_option("--eval-every", flags->eval_every, "validation loss every K steps [steps/10]");
  app->add_option("--eval-batches", flags->eval_batches,
                  "micro-batches per rank in each validation [4]");
  app->add_option("--log-every", flags->log_every, "a log line every K steps off a terminal [10]");
  app->add_option("--out", flags->out, "folder for loss.csv and loss.svg [out]");
  app->add_option("--save-dir", flags->save_dir,
                  "folder for sharded checkpoints, one run's only: saves at the end, and every "
                  "--save-every K steps");
  app->add_option("--save-every", flags->save_every,
                  "save a checkpoint every K steps and at the end (needs --save-dir)");
  app->add_option("--keep", flags->keep, "complete checkpoints to keep [2]");
  app->add_option("--resume", flags->resume,
                  "continue from a checkpoint folder, or the newest one in a --save-dir; any "
                  "--ranks and --stage");
  app->add_flag("--json", flags->json, "print one JSON object at the end instead of a log");
  app->add_flag("--dry-run", flags->dry_run,
                "print the predicted peak memory per rank (and the verdict for --rank-memory) "
                "and exit without training");
  add_engine_flags(app, flags->engine);
  app->callback([flags] { run_train(*flags); });
}

const bool registered = register_command(30, add_train_command);

}  // namespace
}  // namespace zerodp::cli
