// Engine::weights_sha256(): the hash of the full fp32 master, streamed bucket by bucket, equal
// on every rank and at every stage to the hash of gather_master()'s full copy, with no more
// memory than the engine held already.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "zero/engine_testing.h"
#include "zerodp/common/sha256.h"

namespace zerodp {
namespace {

struct RankHash {
  std::string streamed, of_full_copy;
  std::size_t peak_before = 0, peak_after = 0;
  std::uint64_t streamed_bytes = 0, full_copy_bytes = 0;
};

std::vector<RankHash> hashes(int ranks, Stage stage, std::size_t bucket_bytes) {
  model::MlpConfig config;
  config.width = 12;
  config.depth = 3;
  const data::SyntheticRegression samples = testing::mlp_samples(config);
  zero::EngineOptions o;
  o.stage = stage;
  o.bucket_bytes = bucket_bytes;
  std::vector<RankHash> out(ranks);
  std::mutex mu;
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::Mlp mlp(config);
    zero::Engine engine(mlp, comm, samples, o);
    for (int s = 0; s < 3; ++s) engine.step(1e-2f);
    engine.flush();
    RankHash h;
    h.peak_before = engine.ledger().peak_total();
    std::uint64_t sent = comm.stats().ring_bytes();
    h.streamed = engine.weights_sha256();
    h.streamed_bytes = comm.stats().ring_bytes() - sent;
    h.peak_after = engine.ledger().peak_total();
    sent = comm.stats().ring_bytes();
    const std::vector<float> full = engine.gather_master();
    h.full_copy_bytes = comm.stats().ring_bytes() - sent;
    h.of_full_copy = sha256_hex(full.data(), full.size() * sizeof(float));
    std::lock_guard<std::mutex> lock(mu);
    out[comm.rank()] = h;
  });
  return out;
}

TEST(EngineHash, StreamedHashIsTheFullCopysOnEveryRankAndStage) {
  for (int ranks : {1, 3, 4}) {
    for (Stage stage : kStages) {
      for (std::size_t bucket_bytes : {std::size_t{64}, std::size_t{8} << 20}) {
        const auto h = hashes(ranks, stage, bucket_bytes);
        for (int r = 0; r < ranks; ++r) {
          SCOPED_TRACE("N=" + std::to_string(ranks) + " " + std::string(stage_name(stage)) +
                       " bucket " + std::to_string(bucket_bytes) + " rank " + std::to_string(r));
          EXPECT_EQ(h[r].streamed.size(), 64u);
          EXPECT_EQ(h[r].streamed, h[r].of_full_copy);
          EXPECT_EQ(h[r].streamed, h[0].streamed);
          EXPECT_EQ(h[r].peak_after, h[r].peak_before);          // no new buffer
          EXPECT_EQ(h[r].streamed_bytes, h[r].full_copy_bytes);  // the same all-gathers
        }
      }
    }
  }
}

}  // namespace
}  // namespace zerodp
