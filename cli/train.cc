// zerodp train: trains a model (the byte-level GPT by default) with ZeRO stage 0-3 on N ranks,
// with progress, validation, a loss curve and a summary of predicted against measured memory.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "command.h"
#include "engine_flags.h"
#include "loss_curve.h"
#include "progress.h"
#include "train_model.h"
#include "zerodp/checkpoint.h"
#include "zerodp/error.h"
#include "zerodp/optim.h"
#include "zerodp/plan_memory.h"
#include "zerodp/sha256.h"
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

struct Summary {
  nlohmann::json json;
  std::vector<std::string> lines;
};

void run_train(const TrainFlags& f) {
  const ModelSpec spec(f.model);
  const EngineOptions options = engine_options(f.engine, 8);
  const Launch launch = launch_options(f.engine);
  const auto steps = static_cast<std::int64_t>(units::parse_whole(f.steps, "--steps"));
  const auto warmup = static_cast<std::int64_t>(
      f.warmup.empty() ? std::min<std::int64_t>(50, steps / 10)
                       : units::parse_whole(f.warmup, "--warmup", units::Zero::allowed));
  const auto eval_every = static_cast<std::int64_t>(
      f.eval_every.empty()
          ? std::max<std::int64_t>(1, steps / 10)
          : units::parse_whole(f.eval_every, "--eval-every", units::Zero::allowed));
  const std::uint64_t eval_batches =
      units::parse_whole(f.eval_batches, "--eval-batches", units::Zero::allowed);
  const auto log_every = static_cast<std::int64_t>(units::parse_whole(f.log_every, "--log-every"));
  const auto lr = static_cast<float>(
      parse_real(f.lr, "--lr", "a positive number such as 3e-4", /*zero_allowed=*/false));
  const auto save_every = static_cast<std::int64_t>(
      f.save_every.empty() ? 0 : units::parse_whole(f.save_every, "--save-every"));
  const int keep = static_cast<int>(units::parse_whole(f.keep, "--keep"));
  if (save_every > 0 && f.save_dir.empty()) {
    throw UsageError("--save-every: needs --save-dir DIR, the folder to save checkpoints in");
  }
  if (!f.out.empty()) std::filesystem::create_directories(f.out);
  configure_blas_threads(launch);
  // One reader of the checkpoint for all the ranks of this process; it checks every shard.
  std::optional<checkpoint::Checkpoint> resume;
  if (!f.resume.empty()) {
    resume.emplace(checkpoint::Checkpoint::open(f.resume));
    resume->check_model(spec.config_json().dump());
    if (resume->state().step >= steps) {
      throw UsageError("--steps: " + std::to_string(steps) + " steps are done already in " +
                       resume->folder() + "; ask for more to continue");
    }
  }
  const nlohmann::json run_record = {{"lr", lr},
                                     {"warmup", warmup},
                                     {"steps", steps},
                                     {"seed", options.seed},
                                     {"clip", options.clip_norm},
                                     {"grad_accum", options.grad_accum},
                                     {"micro_batch", options.micro_batch}};

  Summary summary;
  std::mutex mu;
  run_ranks(launch, [&](comm::Communicator& comm) {
    const int rank = comm.rank(), ranks = comm.size();
    const bool leader = rank == 0;
    std::unique_ptr<model::Model> model = spec.make();
    Engine engine(*model, comm, spec.samples(), options);
    const std::uint64_t tokens_per_step = std::uint64_t(ranks) * options.micro_batch *
                                          std::uint64_t(options.grad_accum) *
                                          spec.tokens_per_sample();
    if (leader && !f.json) {
      std::printf("zerodp train: %s\n", spec.describe().c_str());
      if (spec.is_gpt()) std::printf("data: %s\n", spec.data()->describe().c_str());
      std::printf(
          "ZeRO stage %d on %d ranks (%s), %s; micro-batch %zu x %d per rank, %llu "
          "tokens per step; lr %g, warm-up %lld, cosine to %lld steps\n",
          stage_number(options.stage), ranks, std::string(comm.backend_name()).c_str(),
          std::string(dtype_name(options.precision)).c_str(), options.micro_batch,
          options.grad_accum, (unsigned long long)tokens_per_step, lr, (long long)warmup,
          (long long)steps);
    }
    Progress progress(steps, log_every);
    LossCurve curve;
    curve.title = "zerodp: " + std::string(spec.is_gpt() ? "byte-level GPT" : "MLP") + ", " +
                  units::format_count(spec.param_count()) + " parameters, ZeRO-" +
                  std::to_string(stage_number(options.stage)) + " on " + std::to_string(ranks) +
                  " ranks";
    double seconds = 0, exposed = 0;
    std::int64_t first_step = 1;
    if (resume) {
      engine.import_state(resume->reader(), resume->state());
      first_step = resume->state().step + 1;
      if (leader && !f.json) {
        progress.note("resumed from " + resume->folder() + " (saved by " +
                      std::to_string(resume->manifest().ranks) + " ranks at stage " +
                      std::to_string(resume->manifest().stage) + ")");
      }
    }
    StepResult last;
    float first_loss = 0, last_val = NAN;
    for (std::int64_t t = first_step; t <= steps; ++t) {
      last = engine.step(optim::lr_at(t, steps, warmup, lr));
      if (t == first_step) first_loss = last.loss;
      seconds += last.seconds;
      exposed += last.exposed_comm_seconds;
      curve.train.emplace_back(t, last.loss);
      const double done = double(t - first_step + 1);
      const double rate = double(tokens_per_step) * done / seconds;
      if (leader && !f.json) {
        progress.step(t, last.loss, rate, seconds / done * double(steps - t), last.skipped);
      }
      if (eval_batches > 0 && eval_every > 0 && (t % eval_every == 0 || t == steps)) {
        last_val =
            validation_loss(engine, spec.samples(), rank, ranks, options.micro_batch, eval_batches);
        curve.validation.emplace_back(t, last_val);
        if (leader && !f.json) {
          char line[128];
          std::snprintf(line, sizeof line, "step %lld/%lld  validation loss %.4f", (long long)t,
                        (long long)steps, last_val);
          progress.note(line);
        }
      }
      if (save_every > 0 && (t % save_every == 0 || t == steps)) {
        const std::string folder = checkpoint::save(
            f.save_dir, engine, comm, spec.config_json().dump(), run_record.dump(), keep);
        if (leader && !f.json) progress.note("saved " + folder);
      }
    }
    if (leader && !f.json) progress.finish();
    const std::vector<float> master = engine.gather_master();
    if (!leader) return;

    const std::uint64_t predicted = plan::model_state_bytes(
        spec.param_count(), ranks, options.stage, plan::BytesPerParam{2, 2, 12});
    const Ledger& ledger = engine.ledger();
    std::lock_guard<std::mutex> lock(mu);
    summary.json = {
        {"model", spec.config_json()},
        {"params", spec.param_count()},
        {"stage", stage_number(options.stage)},
        {"ranks", ranks},
        {"backend", comm.backend_name()},
        {"steps", steps},
        {"first_loss", first_loss},
        {"final_loss", last.loss},
        {"val_loss", std::isfinite(last_val) ? nlohmann::json(last_val) : nlohmann::json()},
        {"tokens_per_second", double(tokens_per_step) * double(steps - first_step + 1) / seconds},
        {"seconds", seconds},
        {"exposed_comm_seconds", exposed},
        {"predicted_model_state_bytes", predicted},
        {"model_state_bytes", ledger.model_state_bytes()},
        {"peak_bytes", ledger.peak_total()},
        {"activation_bytes", ledger.peak(Category::activations)},
        {"weights_sha256", sha256_hex(master.data(), master.size() * sizeof(float))}};
    if (!f.out.empty()) {
      curve.write_csv(f.out + "/loss.csv");
      curve.write_svg(f.out + "/loss.svg");
      summary.json["curve_csv"] = f.out + "/loss.csv";
      summary.json["curve_svg"] = f.out + "/loss.svg";
    }
  });
  if (summary.json.is_null()) return;  // an MPI rank other than 0
  const auto& j = summary.json;
  if (f.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  auto bytes = [](const nlohmann::json& v) { return units::format_bytes(v.get<std::uint64_t>()); };
  std::printf("\nSummary\n");
  std::printf("  model          %s\n", spec.describe().c_str());
  std::printf("  stage, ranks   ZeRO-%d on %d ranks (%s)\n", j["stage"].get<int>(),
              j["ranks"].get<int>(), j["backend"].get<std::string>().c_str());
  std::printf("  loss           %.4f -> %.4f (train)", j["first_loss"].get<double>(),
              j["final_loss"].get<double>());
  if (!j["val_loss"].is_null()) std::printf(", %.4f (validation)", j["val_loss"].get<double>());
  std::printf("\n  speed          %s tokens/s over %s\n",
              format_rate(j["tokens_per_second"].get<double>()).c_str(),
              format_duration(j["seconds"].get<double>()).c_str());
  std::printf("  model state    %s per rank predicted, %s measured (rank 0)\n",
              bytes(j["predicted_model_state_bytes"]).c_str(),
              bytes(j["model_state_bytes"]).c_str());
  std::printf("  peak per rank  %s (ledger: model state, buffers, activations %s)\n",
              bytes(j["peak_bytes"]).c_str(), bytes(j["activation_bytes"]).c_str());
  std::printf("  exposed comm   %.2f s of %.2f s (%.1f %%)\n",
              j["exposed_comm_seconds"].get<double>(), j["seconds"].get<double>(),
              100.0 * j["exposed_comm_seconds"].get<double>() / j["seconds"].get<double>());
  std::printf("  weights        sha256 %s\n", j["weights_sha256"].get<std::string>().c_str());
  if (j.contains("curve_svg")) {
    std::printf("  loss curve     %s, %s\n", j["curve_csv"].get<std::string>().c_str(),
                j["curve_svg"].get<std::string>().c_str());
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
  app->add_option("--save-dir", flags->save_dir, "folder for sharded checkpoints");
  app->add_option("--save-every", flags->save_every,
                  "save a checkpoint every K steps and at the end (needs --save-dir)");
  app->add_option("--keep", flags->keep, "complete checkpoints to keep [2]");
  app->add_option("--resume", flags->resume,
                  "continue from a checkpoint folder, or the newest one in a --save-dir; any "
                  "--ranks and --stage");
  app->add_flag("--json", flags->json, "print one JSON object at the end instead of a log");
  add_engine_flags(app, flags->engine);
  app->callback([flags] { run_train(*flags); });
}

const bool registered = register_command(30, add_train_command);

}  // namespace
}  // namespace zerodp::cli
