// zerodp train: trains a model (the byte-level GPT by default) with ZeRO stage 0-3 on N ranks,
// with progress, validation, a loss curve and a summary of predicted against measured memory.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "app.h"
#include "command.h"
#include "engine_flags.h"
#include "model_flags.h"
#include "output.h"
#include "peak_report.h"
#include "progress.h"
#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/run/checkpoint_model.h"
#include "zerodp/run/engine_run.h"
#include "zerodp/run/stop_signal.h"
#include "zerodp/run/training.h"

namespace zerodp::cli {
namespace {

struct TrainFlags {
  EngineFlags engine;
  run::ModelChoice model;
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
  bool threads_from_checkpoint = false;  // --threads unset, taken from --resume's checkpoint
};

// --resume continues the run its checkpoint holds, so every flag not given takes the value the
// checkpoint records: the model's shape, the data (path and seed), the precision, the batch's
// split, the schedule and validation, the stage, the ranks (threads) and the bucket size, and
// --save-dir when --resume names a save dir (its newest checkpoint): the run goes on saving
// where it did. A flag given is held to the checkpoint by the resume rules
// (zerodp/run/resume_rules.h), every difference in one message.
void take_unset_flags_from(const checkpoint::Checkpoint& ck, const CLI::App& app, TrainFlags& f) {
  const nlohmann::json model = nlohmann::json::parse(ck.manifest().model);
  const nlohmann::json run = nlohmann::json::parse(ck.manifest().run);
  auto unset = [&](const char* flag) { return app.count(flag) == 0; };
  auto take = [&](const char* flag, std::string& value, const nlohmann::json& from,
                  const char* key) {
    if (!unset(flag) || !from.contains(key)) return;
    const nlohmann::json& v = from.at(key);
    value = v.is_string() ? v.get<std::string>() : v.dump();
  };
  take("--model", f.model.model, model, "type");
  if (model.value("type", std::string()) == "mlp") {
    if (unset("--params") && model.contains("width") && model.contains("depth")) {
      f.model.mlp_shape =
          model::MlpConfig{model.at("width").get<std::size_t>(), model.at("depth").get<int>()};
    }
  } else {
    take("--layers", f.model.layers, model, "n_layer");
    take("--heads", f.model.heads, model, "n_head");
    take("--hidden", f.model.hidden, model, "n_embd");
    take("--seq-len", f.model.seq_len, model, "n_positions");
    take("--data", f.model.data, run, "data");
    if (unset("--checkpoint-activations")) {
      f.model.checkpoint_activations = model.value("checkpoint_activations", false);
    }
    // A checkpoint from before --compute computed in fp32.
    if (unset("--compute")) f.model.compute = "fp32";
    take("--compute", f.model.compute, model, "compute");
  }
  take("--data-seed", f.model.data_seed, model, "data_seed");
  take("--steps", f.steps, run, "steps");
  take("--lr", f.lr, run, "lr");
  take("--warmup", f.warmup, run, "warmup");
  take("--eval-every", f.eval_every, run, "eval_every");
  take("--eval-batches", f.eval_batches, run, "eval_batches");
  take("--clip", f.engine.clip, run, "clip");
  take("--seed", f.engine.seed, run, "seed");
  take("--micro-batch", f.engine.micro_batch, run, "micro_batch");
  take("--grad-accum", f.engine.grad_accum, run, "grad_accum");
  take("--precision", f.engine.precision, run, "precision");
  take("--zeropp", f.engine.zeropp, run, "zeropp");
  take("--qwz-block", f.engine.qwz_block, run, "qwz_block");
  if (unset("--ranks-per-host") && run.value("ranks_per_host", 0) > 0 &&
      (f.engine.zeropp.find("hpz") != std::string::npos ||
       f.engine.zeropp.find("qgz") != std::string::npos)) {
    f.engine.ranks_per_host = std::to_string(run.value("ranks_per_host", 0));
  }
  const checkpoint::Manifest& m = ck.manifest();
  if (unset("--stage")) f.engine.stage = std::to_string(m.stage);
  if (unset("--bucket-bytes")) f.engine.bucket_bytes = std::to_string(m.bucket_bytes) + "B";
  // Under MPI the world size is the number of ranks.
  if (unset("--ranks") && f.engine.backend == "threads") f.engine.ranks = std::to_string(m.ranks);
  // The checkpoint's threads where the resume can be bitwise, on its ranks (a checkpoint from
  // before --threads computed on one); on other ranks, auto fits the cores to them.
  // (The ranks as the run reads them, so that --ranks 01 is 1; under MPI the world size.)
  const run::Launch launch = launch_options(f.engine);
  const bool ranks_known = launch.ranks > 0 || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  if (unset("--threads") && (!ranks_known || run::planned_ranks(launch) == m.ranks)) {
    f.engine.threads = "1";
    take("--threads", f.engine.threads, run, "threads");
    f.threads_from_checkpoint = true;
  }
  if (unset("--save-dir") && ck.folder() != f.resume) f.save_dir = f.resume;
}

// The run's settings from the flags, parsed and checked once, before any rank starts.
run::TrainSettings train_settings(const TrainFlags& f) {
  run::TrainSettings s(run::ModelSpec(f.model), engine_options(f.engine, 8),
                       launch_options(f.engine));
  s.compute_line = s.spec.resolve_compute(s.options.precision);
  s.threads_source = f.threads_from_checkpoint ? "the checkpoint's"
                     : s.launch.threads > 0    ? "--threads"
                                               : "auto: the rank's share of the cores, at most the "
                                                 "micro-batch";
  s.threads();  // refuses --threads the model cannot use
  // Step counts: checkpoint folders are named step-%08d and found in name order, so a step
  // has at most 8 digits (and 99,999,999 steps is years of training).
  constexpr std::uint64_t kSteps = 99'999'999;
  s.steps = static_cast<std::int64_t>(units::parse_whole_in(f.steps, "--steps", 1, kSteps));
  s.warmup = static_cast<std::int64_t>(
      f.warmup.empty() ? std::min<std::int64_t>(50, s.steps / 10)
                       : units::parse_whole_in(f.warmup, "--warmup", 0, kSteps));
  s.eval_every = static_cast<std::int64_t>(
      f.eval_every.empty() ? std::max<std::int64_t>(1, s.steps / 10)
                           : units::parse_whole_in(f.eval_every, "--eval-every", 0, kSteps));
  s.eval_batches = units::parse_whole_in(f.eval_batches, "--eval-batches", 0, 1'000'000);
  s.log_every =
      static_cast<std::int64_t>(units::parse_whole_in(f.log_every, "--log-every", 1, kSteps));
  s.lr = static_cast<float>(
      units::parse_real(f.lr, "--lr", "a positive number such as 3e-4", units::Zero::rejected));
  s.save_every = static_cast<std::int64_t>(
      f.save_every.empty() ? 0 : units::parse_whole_in(f.save_every, "--save-every", 1, kSteps));
  s.keep = static_cast<int>(units::parse_whole_in(f.keep, "--keep", 1, 1'000'000));
  if (s.save_every > 0 && f.save_dir.empty()) {
    throw UsageError("--save-every: needs --save-dir DIR, the folder to save checkpoints in");
  }
  s.out = f.out;
  s.save_dir = f.save_dir;
  s.resume = f.resume;
  s.launch.agree = s.agreement();
  return s;
}

// Rank 0's log for people (not --json): the progress bar or lines, validation, checkpoints.
class TrainLog final : public run::TrainObserver {
 public:
  explicit TrainLog(const run::TrainSettings& s)
      : steps_(s.steps), progress_(s.steps, s.log_every, s.spec.is_gpt() ? "tok/s" : "samples/s") {}

  // The run's first lines: the model, the data, the engine and the schedule.
  void header(const run::TrainSettings& s, const comm::Communicator& comm,
              std::uint64_t tokens_per_step) const {
    const run::ModelSpec& spec = s.spec;
    const zero::EngineOptions& o = s.options;
    std::fprintf(out(), "zerodp train: %s\n", spec.describe().c_str());
    if (spec.is_gpt()) std::fprintf(out(), "data: %s\n", spec.data()->describe().c_str());
    const std::string qwz = run::zeropp_description(
        run::engine_run(spec, o, s.launch, comm.size(), comm.ranks_per_host()));
    std::fprintf(
        out(),
        "ZeRO stage %d%s on %d ranks (%s), %s; micro-batch %zu x %d per rank, %llu "
        "tokens per step; lr %g, warm-up %lld, cosine to %lld steps\n",
        stage_number(o.stage), qwz.c_str(), comm.size(), std::string(comm.backend_name()).c_str(),
        std::string(dtype_name(o.precision)).c_str(), o.micro_batch, o.grad_accum,
        (unsigned long long)tokens_per_step, s.lr, (long long)s.warmup, (long long)s.steps);
    if (!s.compute_line.empty()) std::fprintf(out(), "%s\n", s.compute_line.c_str());
    if (spec.is_gpt()) {
      std::fprintf(out(), "threads: %d per rank (%s)\n", s.threads(), s.threads_source.c_str());
    }
    for (const std::string& note : s.resume_notes) {
      std::fprintf(out(), "%s\n", name_fields(note, flag_of_field).c_str());
    }
  }

  void resumed(const checkpoint::Checkpoint& ck) override {
    progress_.note("resumed from " + printable(ck.folder()) + " (saved by " +
                   std::to_string(ck.manifest().ranks) + " ranks at stage " +
                   std::to_string(ck.manifest().stage) + ")");
  }
  void stepped(std::int64_t step, const zero::StepResult& result, double rate,
               double seconds_left) override {
    progress_.step(step, result.loss, rate, seconds_left, result.skipped);
  }
  void validated(std::int64_t step, float loss) override {
    char line[128];
    std::snprintf(line, sizeof line, "step %lld/%lld  validation loss %.4f", (long long)step,
                  (long long)steps_, loss);
    progress_.note(line);
  }
  void saved(const std::string& folder) override { progress_.note("saved " + printable(folder)); }
  void stepping_ended() override { progress_.finish(); }

 private:
  const std::int64_t steps_;
  Progress progress_;
};

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
void print_summary(const run::ModelSpec& spec, const nlohmann::json& j) {
  auto bytes = [](const nlohmann::json& v) { return units::format_bytes(v.get<std::uint64_t>()); };
  std::fprintf(out(), "\nSummary\n");
  std::fprintf(out(), "  model          %s\n", spec.describe().c_str());
  std::fprintf(out(), "  stage, ranks   ZeRO-%d on %d ranks (%s)\n", j["stage"].get<int>(),
               j["ranks"].get<int>(), j["backend"].get<std::string>().c_str());
  std::fprintf(out(), "  loss           %.4f -> %.4f (train)", j["first_loss"].get<double>(),
               j["final_loss"].get<double>());
  if (!j["val_loss"].is_null())
    std::fprintf(out(), ", %.4f (validation)", j["val_loss"].get<double>());
  // The MLP's samples are one "token" each: its rate is in samples.
  std::fprintf(out(), "\n  speed          %s %s over %s\n",
               format_rate(j["tokens_per_second"].get<double>()).c_str(),
               spec.is_gpt() ? "tokens/s" : "samples/s",
               format_duration(j["seconds"].get<double>()).c_str());
  std::fprintf(out(), "  model state    %s per rank predicted, %s measured (rank 0)\n",
               bytes(j["predicted_model_state_bytes"]).c_str(),
               bytes(j["model_state_bytes"]).c_str());
  std::fprintf(out(), "  peak per rank  %s measured (ledger), %s predicted; activations %s\n",
               bytes(j["peak_bytes"]).c_str(), bytes(j["predicted_peak_bytes"]).c_str(),
               bytes(j["activation_bytes"]).c_str());
  const nlohmann::json& ranks = j["per_rank"];
  for (std::size_t r = 1; r < ranks.size() && r < 8; ++r) {
    std::fprintf(out(), "    rank %-8zu %s measured, %s predicted\n", r,
                 bytes(ranks[r]["peak_bytes"]).c_str(),
                 bytes(ranks[r]["predicted_peak_bytes"]).c_str());
  }
  if (ranks.size() > 8) std::fprintf(out(), "    (every rank in --json)\n");
  std::fprintf(out(), "  exposed comm   %.2f s of %.2f s (%.1f %%)\n",
               j["exposed_comm_seconds"].get<double>(), j["seconds"].get<double>(),
               100.0 * j["exposed_comm_seconds"].get<double>() / j["seconds"].get<double>());
  std::fprintf(out(), "  weights        sha256 %s\n",
               j["weights_sha256"].get<std::string>().c_str());
  if (j.contains("curve_svg")) {
    std::fprintf(out(), "  loss curve     %s, %s\n",
                 printable(j["curve_csv"].get<std::string>()).c_str(),
                 printable(j["curve_svg"].get<std::string>()).c_str());
  }
}

// Rank 0's report: the summary, and where a stopped run left its checkpoint and curve (on
// err() with --json, so out() stays one JSON object).
void report(const TrainFlags& f, const run::TrainSettings& settings,
            const nlohmann::json& summary) {
  if (f.json) {
    std::fprintf(out(), "%s\n", summary.dump(2).c_str());
  } else {
    print_summary(settings.spec, summary);
  }
  if (summary.contains("stopped")) {
    std::fprintf(f.json ? err() : out(), "%s\n", stop_line(f, summary).c_str());
  }
}

// --dry-run: the planner's peak for exactly this run, and the verdict for --rank-memory,
// before anything is allocated. Under mpirun, rank 0 prints.
void dry_run(const TrainFlags& f, const run::TrainSettings& settings) {
  const run::Launch& launch = settings.launch;
  const predict::EngineRun run =
      run::engine_run(settings.spec, settings.options, launch, run::planned_ranks(launch));
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
                        {"threads", run.model_threads},
                        {"bucket_bytes", run.bucket_bytes},
                        {"prefetch", run.prefetch},
                        {"zeropp", run::zeropp_value(settings.options)},
                        {"hpz_ranks_per_host", run.hpz_ranks},
                        {"qwz_block", run.qwz_block}};
    j.update(run::peak_json(run, budget, run::max_ranks_searched(launch), flag_of_field));
    std::fprintf(out(), "%s\n", j.dump(2).c_str());
  } else {
    print_peak(settings.spec.describe(), run, budget, run::max_ranks_searched(launch));
  }
}

// --out before any step: the folder made, and its loss.csv and loss.svg replaceable, so a run
// never trains to the end to find it cannot write its curve.
void check_curve_folder(const std::string& out) {
  if (out.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (!std::filesystem::is_directory(out, ec)) {
    throw UsageError("--out: cannot make the folder " + quote(out) + " (" +
                     (ec ? ec.message() : std::string("a file is in the way")) +
                     "); give a folder for loss.csv and loss.svg");
  }
  for (const char* name : {"loss.csv", "loss.svg"}) {
    check_output_file((std::filesystem::path(out) / name).string(), "--out",
                      "a folder for loss.csv and loss.svg");
  }
}

void run_train(TrainFlags f, const CLI::App& app) {
  if (f.dry_run && !f.resume.empty()) {
    throw UsageError("--dry-run: plans a new run; give the resumed run's flags without --resume");
  }
  // Opened once for all the ranks of this process (it checks every shard).
  std::optional<checkpoint::Checkpoint> resume;
  if (!f.resume.empty()) {
    resume.emplace(checkpoint::Checkpoint::open(f.resume));
    take_unset_flags_from(*resume, app, f);
  }
  run::TrainSettings settings = train_settings(f);
  if (f.dry_run) {
    dry_run(f, settings);
    return;
  }
  run::check_memory(
      {settings.spec.param_count(), settings.spec.activation_bytes(settings.options.micro_batch),
       settings.spec.size_field()},
      settings.options, settings.launch);
  check_curve_folder(f.out);
  run::stop_signal::install();  // from here on, SIGTERM and SIGINT stop at a step boundary
  run::configure_blas_threads(settings.launch, settings.threads());
  if (resume) run::check_resume(settings, *resume);
  // Held until the run ends: the folder's lock and the run id its manifests record.
  std::optional<checkpoint::SaveDir> save_dir = run::claim_save_dir(
      f.save_dir, settings.launch.backend == "mpi", resume ? &*resume : nullptr);
  int stopped_by = 0;  // the same on every rank
  std::mutex mu;
  run::run_ranks(settings.launch, [&](comm::Communicator& comm) {
    const run::TrainSettings here = settings.on_ranks(comm, resume ? &*resume : nullptr);
    // Every check has passed on every rank: only now may a rewind move checkpoints aside (a
    // refused run leaves the folder as it found it). The claim lives in rank 0's process.
    if (save_dir && comm.rank() == 0) {
      const std::string note = save_dir->set_aside_superseded();
      if (!note.empty()) std::fprintf(f.json ? err() : out(), "%s\n", note.c_str());
    }
    std::optional<TrainLog> log;
    if (comm.rank() == 0 && !f.json) log.emplace(here);
    std::optional<run::Training> run_here;
    try {  // a budget refuses in the engine's setup or in the first step
      run_here.emplace(here, comm, log ? &*log : nullptr);
      if (log) log->header(here, comm, run_here->tokens_per_step());
      if (resume) run_here->resume_from(*resume);
      run_here->train();
    } catch (const BudgetExceeded& e) {
      throw Error(
          failure_text(e) + "; --rank-memory: " +
          run::fit_advice(run::engine_run(here.spec, here.options, here.launch, comm.size()),
                          here.options.rank_memory, run::max_ranks_searched(here.launch)));
    }
    run::Training& run = *run_here;
    const nlohmann::json summary = run.finish();
    if (!summary.is_null()) report(f, settings, summary);  // null: a rank other than 0
    if (run.stopped_by() != 0) {
      // mpirun ends the whole job as soon as one process exits with an error status: rank 0
      // must have reported before any rank exits with 143.
      std::fflush(nullptr);
      comm.barrier();
      run::stop_signal::ending();
    }
    std::lock_guard<std::mutex> lock(mu);
    stopped_by = run.stopped_by();
  });
  if (stopped_by != 0) {
    std::fflush(nullptr);
    std::exit(run::stop_signal::exit_status(stopped_by));  // every rank, as a scheduler expects
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
                  "continue from a checkpoint folder, or the newest one in a --save-dir (and save "
                  "there): the flags not given are the checkpoint's; any --ranks and --stage");
  app->add_flag("--json", flags->json, "print one JSON object at the end instead of a log");
  app->add_flag("--dry-run", flags->dry_run,
                "print the predicted peak memory per rank (and the verdict for --rank-memory) "
                "and exit without training");
  add_engine_flags(app, flags->engine);
  app->callback([flags, app] { run_train(*flags, *app); });
}

const bool train_registered = register_command(30, add_train_command);

}  // namespace
}  // namespace zerodp::cli
