// Runs the engine on N thread ranks over the MLP and collects what the tests compare.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/data/samples.h"
#include "zerodp/model/mlp.h"
#include "zerodp/zero/engine.h"

namespace zerodp::testing {

// The synthetic samples the MLP trains on in these tests (train's default data seed).
inline data::SyntheticRegression mlp_samples(const model::MlpConfig& config) {
  return data::SyntheticRegression(config.width, 1234);
}

struct RankReport {
  std::size_t model_state_bytes = 0;
  std::uint64_t comm_bytes = 0;  // ring bytes over all steps, after flush
  std::uint64_t scalar_bytes = 0;
  Ledger ledger;
};

struct TrainRun {
  std::vector<float> master;  // consolidated fp32 weights after the last step
  std::vector<float> losses;  // per step, as rank 0 saw them
  std::vector<RankReport> ranks;
  int skipped = 0;
};

inline TrainRun train_mlp(const model::MlpConfig& config, zero::EngineOptions options, int ranks,
                          int steps, float lr = 1e-2f, int engine_threads = 1) {
  TrainRun run;
  run.ranks.resize(ranks);
  std::mutex mu;
  const data::SyntheticRegression samples = mlp_samples(config);
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::Mlp mlp(config);
    zero::Engine engine(mlp, comm, samples, options);
    engine.set_threads(engine_threads);
    const comm::Stats before = comm.stats();
    std::vector<float> losses;
    std::uint64_t scalar = 0;
    int skipped = 0;
    for (int s = 0; s < steps; ++s) {
      zero::StepResult r = engine.step(lr);
      losses.push_back(r.loss);
      scalar += r.scalar_bytes;
      skipped += r.skipped;
    }
    engine.flush();
    RankReport report;
    report.comm_bytes = comm.stats().ring_bytes() - before.ring_bytes() - scalar;
    report.scalar_bytes = scalar;
    report.model_state_bytes = engine.ledger().model_state_bytes();
    report.ledger = engine.ledger();
    std::vector<float> master = engine.gather_master();
    std::lock_guard<std::mutex> lock(mu);
    run.ranks[comm.rank()] = report;
    if (comm.rank() == 0) {
      run.master = std::move(master);
      run.losses = std::move(losses);
      run.skipped = skipped;
    }
  });
  return run;
}

}  // namespace zerodp::testing
