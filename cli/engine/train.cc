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
#include "help.h"
#include "model_flags.h"
#include "output.h"
#include "peak_report.h"
#include "progress.h"
#include "zerodp/common/error.h"
#include "zerodp/common/json_utf8.h"
#include "zerodp/common/units.h"
#include "zerodp/optim/rule.h"
#include "zerodp/run/checkpoint_model.h"
#include "zerodp/run/engine_run.h"
#include "zerodp/run/stop_signal.h"
#include "zerodp/run/training.h"

namespace zerodp::cli {
namespace {

// The run as written, and what only the command line uses.
struct TrainFlags {
  run::TrainChoice run;
  bool json = false;
  bool dry_run = false;
};

// Whether the flag of `field` was typed: a resume takes the checkpoint's value otherwise.
run::GivenField given_flags(const CLI::App& app) {
  return [&app](std::string_view field) { return app.count(flag_of_field(field)) > 0; };
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
        "tokens per step; %s, lr %g, warm-up %lld, cosine to %lld steps\n",
        stage_number(o.stage), qwz.c_str(), comm.size(), std::string(comm.backend_name()).c_str(),
        std::string(dtype_name(o.precision)).c_str(), o.micro_batch, o.grad_accum,
        (unsigned long long)tokens_per_step, std::string(optim::engine_word(*o.rule().row)).c_str(),
        s.lr, (long long)s.warmup, (long long)s.steps);
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
            " (continue with --resume " + printable(f.run.save_dir) + ")";
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
    std::fprintf(out(), "%s\n", utf8_dump(summary, 2).c_str());
  } else {
    print_summary(settings.spec, summary);
  }
  if (summary.contains("stopped")) {
    // Where the checkpoint is goes where it can be read: not to a reader that has gone.
    const bool reader_gone = summary["stopped"]["signal"] == "SIGPIPE";
    std::fprintf(f.json || reader_gone ? err() : out(), "%s\n", stop_line(f, summary).c_str());
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
                        {"frozen_params", settings.spec.frozen_param_count()},
                        {"stage", stage_number(run.stage)},
                        {"ranks", run.ranks},
                        {"backend", launch.backend},
                        {"micro_batch", run.micro_batch},
                        {"grad_accum", run.grad_accum},
                        {"threads", run.model_threads},
                        {"bucket_bytes", run.bucket_bytes},
                        {"prefetch", run.prefetch},
                        {"zeropp", run::zeropp_value(settings.options)},
                        {"hpz_ranks_per_host", run.hpz_ranks()},
                        {"qwz_block", run.qwz_block}};
    j.update(run::peak_json(run, budget, run::max_ranks_searched(launch), flag_of_field));
    std::fprintf(out(), "%s\n", utf8_dump(j, 2).c_str());
  } else {
    print_peak(settings.spec.describe(), run, budget, run::max_ranks_searched(launch));
  }
}

void run_train(TrainFlags f, const CLI::App& app) {
  if (f.dry_run && !f.run.resume.empty()) {
    throw UsageError("--dry-run: plans a new run; give the resumed run's flags without --resume");
  }
  // Opened once for all the ranks of this process (it checks every shard).
  std::optional<checkpoint::Checkpoint> resume;
  if (!f.run.resume.empty()) {
    resume.emplace(checkpoint::Checkpoint::open(f.run.resume));
    run::take_from_record(run::read_run_record(*resume), *resume, given_flags(app), f.run);
  }
  run::TrainSettings settings = run::train_settings(f.run);
  if (f.dry_run) {
    dry_run(f, settings);
    return;
  }
  run::check_memory(
      {settings.spec.param_count(), settings.spec.activation_bytes(settings.options.micro_batch),
       settings.spec.size_field(), settings.spec.frozen_param_count()},
      settings.options, settings.launch);
  run::check_curve_folder(settings.out);
  run::stop_signal::install();  // from here on, SIGTERM and SIGINT stop at a step boundary
  run::configure_blas_threads(settings.launch, settings.threads());
  if (resume) run::check_resume(settings, *resume);
  // Held until the run ends: the folder's lock and the run id its manifests record.
  std::optional<checkpoint::SaveDir> save_dir = run::claim_save_dir(
      settings.save_dir, settings.launch.backend == "mpi", resume ? &*resume : nullptr);
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
  CLI::App* app = root.add_subcommand("train");
  describe_command(*app);
  add_model_flags(app, flags->run.model);
  add_lora_flags(app, flags->run.model);
  app->add_option("--steps", flags->run.steps, "optimizer steps [200]");
  app->add_option("--lr", flags->run.lr,
                  "peak learning rate [adamw and adamw-8bit 2e-3, adafactor 1e-3, lion and "
                  "lion-8bit 6e-4, sgd-momentum 0.1, sgd 0.25]");
  app->add_option("--warmup", flags->run.warmup, "linear warm-up steps [steps/10, at most 50]");
  app->add_option("--eval-every", flags->run.eval_every,
                  "validation loss every K steps [steps/10]");
  app->add_option("--eval-batches", flags->run.eval_batches,
                  "micro-batches per rank in each validation [4]");
  app->add_option("--log-every", flags->run.log_every,
                  "a log line every K steps off a terminal [10]");
  app->add_option("--out", flags->run.out, "folder for loss.csv and loss.svg [out]");
  app->add_option("--save-dir", flags->run.save_dir,
                  "folder for sharded checkpoints, one run's only: saves at the end, and every "
                  "--save-every K steps");
  app->add_option("--save-every", flags->run.save_every,
                  "save a checkpoint every K steps and at the end (needs --save-dir)");
  app->add_option("--keep", flags->run.keep, "complete checkpoints to keep [2]");
  app->add_option("--resume", flags->run.resume,
                  "continue from a checkpoint folder, or the newest one in a --save-dir (and save "
                  "there): the flags not given are the checkpoint's; any --ranks and --stage");
  app->add_flag("--json", flags->json, "print one JSON object at the end instead of a log");
  app->add_flag("--dry-run", flags->dry_run,
                "print the predicted peak memory per rank (and the verdict for --rank-memory) "
                "and exit without training");
  add_engine_flags(app, flags->run.engine);
  app->callback([flags, app] { run_train(*flags, *app); });
}

const bool train_registered = register_command(30, add_train_command);

}  // namespace
}  // namespace zerodp::cli
