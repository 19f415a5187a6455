// zerodp train: trains a model with ZeRO stage 0-3 on N ranks and reports loss, speed and
// memory; --json ends with {"final_loss", "weights_sha256", ...}.
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/sha256.h"
#include "engine_flags.h"
#include "zerodp/error.h"
#include "zerodp/mlp.h"
#include "zerodp/optim.h"
#include "zerodp/units.h"

namespace zerodp::cli {
namespace {

struct TrainFlags {
  EngineFlags engine;
  std::string params = "1M";
  std::string steps = "20";
  std::string lr = "1e-3";
  std::string warmup = "0";
  std::string log_every = "1";
  bool json = false;
};

float parse_lr(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0 ||
      text.find_first_not_of("0123456789.eE+-") != std::string::npos) {
    throw UsageError("--lr: expected a positive learning rate such as 3e-4, got '" + text + "'");
  }
  return static_cast<float>(v);
}

void run_train(const TrainFlags& f) {
  const EngineOptions options = engine_options(f.engine, 8);
  const Launch launch = launch_options(f.engine);
  const model::MlpConfig config =
      model::MlpConfig::for_params(units::parse_count(f.params, "--params"));
  const auto steps = static_cast<std::int64_t>(units::parse_whole(f.steps, "--steps"));
  const auto warmup =
      static_cast<std::int64_t>(units::parse_whole(f.warmup, "--warmup", units::Zero::allowed));
  const auto log_every = static_cast<std::int64_t>(units::parse_whole(f.log_every, "--log-every"));
  const float lr = parse_lr(f.lr);
  configure_blas_threads(launch);

  nlohmann::json summary;
  std::mutex mu;
  run_ranks(launch, [&](comm::Communicator& comm) {
    model::Mlp mlp(config);
    Engine engine(mlp, comm, options);
    const bool leader = comm.rank() == 0;
    if (leader && !f.json) {
      std::printf("zerodp train: %s; stage %d on %d ranks (%s), %s, micro-batch %zu x %d\n",
                  mlp.describe().c_str(), options.stage, comm.size(),
                  std::string(comm.backend_name()).c_str(),
                  std::string(dtype_name(options.precision)).c_str(), options.micro_batch,
                  options.grad_accum);
    }
    StepResult last;
    double seconds = 0, exposed = 0;
    for (std::int64_t t = 1; t <= steps; ++t) {
      last = engine.step(optim::lr_at(t, steps, warmup, lr));
      seconds += last.seconds;
      exposed += last.exposed_comm_seconds;
      if (leader && !f.json && (t % log_every == 0 || t == steps)) {
        std::printf("step %4lld/%lld  loss %.6f  grad-norm %.4f  %s%.1f ms\n", (long long)t,
                    (long long)steps, last.loss, last.grad_norm, last.skipped ? "skipped  " : "",
                    last.seconds * 1e3);
        std::fflush(stdout);
      }
    }
    const std::vector<float> master = engine.gather_master();
    if (!leader) return;
    std::lock_guard<std::mutex> lock(mu);
    summary = {{"model", mlp.describe()},
               {"params", mlp.param_count()},
               {"stage", options.stage},
               {"ranks", comm.size()},
               {"backend", comm.backend_name()},
               {"steps", steps},
               {"final_loss", last.loss},
               {"seconds", seconds},
               {"exposed_comm_seconds", exposed},
               {"model_state_bytes_rank0", engine.ledger().model_state_bytes()},
               {"weights_sha256", sha256_hex(master.data(), master.size() * sizeof(float))}};
  });
  if (summary.is_null()) return;  // not the leader process
  if (f.json) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf("final loss %.6f; weights sha256 %s\n", summary["final_loss"].get<float>(),
                summary["weights_sha256"].get<std::string>().c_str());
  }
}

void add_train_command(CLI::App& root) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* app = root.add_subcommand("train", "Train a model with ZeRO stage 0-3 on N ranks");
  app->add_option("--params", flags->params, "MLP size in parameters, e.g. 10M [1M]");
  app->add_option("--steps", flags->steps, "optimizer steps [20]");
  app->add_option("--lr", flags->lr, "peak learning rate [1e-3]");
  app->add_option("--warmup", flags->warmup, "linear warm-up steps before cosine decay [0]");
  app->add_option("--log-every", flags->log_every, "print every K steps [1]");
  app->add_flag("--json", flags->json, "print one JSON object at the end instead of a log");
  add_engine_flags(app, flags->engine);
  app->callback([flags] { run_train(*flags); });
}

const bool registered = register_command(30, add_train_command);

}  // namespace
}  // namespace zerodp::cli
