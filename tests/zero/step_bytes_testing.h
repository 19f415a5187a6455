// The bytes each rank moves in a few steps of a GPT on thread ranks, against what predict/peak.h
// counts for them: shared by the tests of a frozen base (LoRA, QLoRA).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/data/samples.h"
#include "zerodp/model/gpt.h"
#include "zerodp/predict/peak.h"
#include "zerodp/zero/engine.h"

namespace zerodp::testing {

// Each rank's ring bytes (the formula of comm/communicator.h) and sent bytes (counted as they
// moved) over `steps` steps, the loss and norm scalars' apart.
struct RankBytes {
  std::vector<std::uint64_t> ring, sent;
};
inline RankBytes gpt_step_bytes(const model::GptConfig& config, const zero::EngineOptions& options,
                                const data::SampleSource& samples, int ranks, int steps) {
  RankBytes bytes{std::vector<std::uint64_t>(std::size_t(ranks)),
                  std::vector<std::uint64_t>(std::size_t(ranks))};
  std::mutex mu;
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::GptModel model(config);
    zero::Engine engine(model, comm, samples, options);
    const comm::Stats before = comm.stats();
    std::uint64_t scalar_ring = 0, scalar_sent = 0;
    for (int s = 0; s < steps; ++s) {
      const zero::StepResult r = engine.step(1e-2f);
      scalar_ring += r.scalar_bytes;
      scalar_sent += r.scalar_sent_bytes;
    }
    engine.flush();
    const comm::Stats after = comm.stats();
    std::lock_guard lock(mu);
    bytes.ring[std::size_t(comm.rank())] = after.ring_bytes() - before.ring_bytes() - scalar_ring;
    bytes.sent[std::size_t(comm.rank())] = after.sent_bytes() - before.sent_bytes() - scalar_sent;
  });
  return bytes;
}

// Every rank's bytes equal `steps` times predict_rank_ring_bytes() and, on one host a rank,
// predict_host_send_bytes().
inline void expect_bytes_predicted(const RankBytes& bytes, const predict::EngineRun& run,
                                   int steps) {
  const std::vector<std::uint64_t> hosts = predict::predict_host_send_bytes(run, 1);
  for (int r = 0; r < run.ranks; ++r) {
    SCOPED_TRACE("stage " + std::to_string(stage_number(run.stage)) + ", rank " +
                 std::to_string(r) + " of " + std::to_string(run.ranks));
    EXPECT_EQ(bytes.ring[std::size_t(r)], steps * predict::predict_rank_ring_bytes(run, r));
    EXPECT_EQ(bytes.sent[std::size_t(r)], steps * hosts[std::size_t(r)]);
  }
}

}  // namespace zerodp::testing
