// The engine with a frozen base (a LoRA GPT): only the adapters take gradients, a master copy and
// optimizer slots; the base is held in 16 bits, whole at stages 0-2 and sharded at stage 3, where
// it is gathered unit by unit; and stages 0-3 train the same adapters to the bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "zero/step_bytes_testing.h"
#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"
#include "zerodp/common/partition.h"
#include "zerodp/data/samples.h"
#include "zerodp/data/text_data.h"
#include "zerodp/model/gpt.h"
#include "zerodp/predict/peak.h"
#include "zerodp/zero/engine.h"

namespace zerodp {
namespace {

model::GptConfig small_lora_gpt() {
  model::GptConfig c;
  c.layers = 2, c.heads = 2, c.hidden = 16, c.seq_len = 8;
  c.lora_rank = 4;
  c.lora_alpha = 8.0f;
  c.lora_targets = model::kLoraAllTargets;
  return c;
}

struct LoraRun {
  std::vector<float> adapters;  // consolidated fp32 adapters after the last step
  std::vector<float> losses;    // per step, as rank 0 saw them
  std::vector<Ledger> ledgers;  // per rank, after the last step
};

LoraRun train_lora(const model::GptConfig& c, zero::EngineOptions o, int ranks, int steps) {
  LoraRun run;
  run.ledgers.resize(std::size_t(ranks));
  std::mutex mu;
  const auto text =
      std::make_shared<const data::TextData>(data::TextData::default_corpus(c.seq_len));
  const data::TextWindows samples(text, 1234);
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::GptModel model(c);
    zero::Engine engine(model, comm, samples, o);
    std::vector<float> losses;
    for (int s = 0; s < steps; ++s) losses.push_back(engine.step(3e-2f).loss);
    engine.flush();
    std::vector<float> adapters = engine.gather_master();
    std::lock_guard lock(mu);
    run.ledgers[std::size_t(comm.rank())] = engine.ledger();
    if (comm.rank() == 0) {
      run.adapters = std::move(adapters);
      run.losses = std::move(losses);
    }
  });
  return run;
}

TEST(EngineLora, EveryStageTrainsTheSameAdaptersToTheBit) {
  const model::GptConfig c = small_lora_gpt();
  for (int ranks : {1, 2, 3}) {
    zero::EngineOptions o;
    o.micro_batch = 2;
    o.bucket_bytes = 600;  // 300 elements: units cut into several buckets, shared unevenly
    o.stage = Stage::dp;
    const LoraRun reference = train_lora(c, o, ranks, 6);
    ASSERT_EQ(reference.adapters.size(), c.lora_param_count());
    EXPECT_LT(reference.losses.back(), reference.losses.front()) << ranks;
    for (int stage = 1; stage <= 3; ++stage) {
      o.stage = stage_from_number(stage);
      const LoraRun run = train_lora(c, o, ranks, 6);
      EXPECT_EQ(std::memcmp(run.adapters.data(), reference.adapters.data(),
                            reference.adapters.size() * sizeof(float)),
                0)
          << "stage " << stage << ", " << ranks << " ranks";
      EXPECT_EQ(run.losses, reference.losses) << "stage " << stage << ", " << ranks << " ranks";
    }
  }
}

// What each rank holds, category by category: the adapters as the stage shards any model's
// params, and the base's 16 bits beside them, whole until stage 3 shards them too.
TEST(EngineLora, TheBaseIsHeldIn16BitsWholeUntilStage3ShardsIt) {
  const model::GptConfig c = small_lora_gpt();
  const model::GptModel shape(c);
  const int ranks = 3;
  zero::EngineOptions o;
  o.micro_batch = 1;
  o.bucket_bytes = 600;
  for (int stage = 0; stage <= 3; ++stage) {
    o.stage = stage_from_number(stage);
    const LoraRun run = train_lora(c, o, ranks, 1);
    const Sharding s = sharding(o.stage);
    for (int r = 0; r < ranks; ++r) {
      const Partition adapters = make_partition(model::param_counts(shape.units()),
                                                bucket_elements(o.bucket_bytes), ranks, r);
      const Partition base = make_partition(model::frozen_counts(shape.units()),
                                            bucket_elements(o.bucket_bytes), ranks, r);
      ASSERT_EQ(adapters.total, c.lora_param_count());
      ASSERT_EQ(base.total, c.param_count());
      const Ledger& l = run.ledgers[std::size_t(r)];
      const std::size_t held = s.parameters ? adapters.local_total : adapters.total;
      const std::size_t base_held = s.parameters ? base.local_total : base.total;
      EXPECT_EQ(l.live(Category::params16), 2 * (held + base_held)) << stage << " " << r;
      EXPECT_EQ(l.live(Category::grads16),
                2 * (s.gradients ? adapters.local_total : adapters.total))
          << stage << " " << r;
      const std::size_t states = s.optimizer_states ? adapters.local_total : adapters.total;
      EXPECT_EQ(l.live(Category::master32), 4 * states) << stage << " " << r;
      EXPECT_EQ(l.live(Category::optim_m), 4 * states) << stage << " " << r;
      EXPECT_EQ(l.live(Category::optim_v), 4 * states) << stage << " " << r;
    }
  }
}

// A base trained whole, then loaded as the frozen base of a LoRA run: while B is zero the LoRA
// model computes the base's loss to the bit, at every stage (stage 3 gathers the imported
// chunks), and training the adapters moves it.
TEST(EngineLora, AnImportedBaseGivesTheBasesLossUntilTheAdaptersMove) {
  model::GptConfig base_config = small_lora_gpt();
  base_config.lora_rank = 0;
  const auto text =
      std::make_shared<const data::TextData>(data::TextData::default_corpus(base_config.seq_len));
  const data::TextWindows samples(text, 1234);
  data::Batch held_out;
  samples.draw(data::Split::validation, 0, 2, held_out);
  zero::EngineOptions o;
  o.micro_batch = 2;
  o.bucket_bytes = 600;
  std::vector<float> base;
  float base_loss = 0.0f;
  comm::run_thread_ranks(1, {}, [&](comm::Communicator& comm) {
    model::GptModel model(base_config);
    zero::Engine engine(model, comm, samples, o);
    for (int s = 0; s < 3; ++s) engine.step(1e-2f);
    base = engine.gather_master();
    base_loss = engine.evaluate(zero::micro_batch_of(held_out));
  });
  for (int stage = 0; stage <= 3; ++stage) {
    o.stage = stage_from_number(stage);
    std::mutex mu;
    std::vector<float> before(2), after(2);
    comm::run_thread_ranks(2, {}, [&](comm::Communicator& comm) {
      model::GptModel model(small_lora_gpt());
      zero::Engine engine(model, comm, samples, o);
      engine.import_frozen([&](zero::FlatRange range, float* values, float*, float*) {
        std::copy_n(base.begin() + std::ptrdiff_t(range.offset), range.count, values);
      });
      const float first = engine.evaluate(zero::micro_batch_of(held_out));
      for (int s = 0; s < 3; ++s) engine.step(3e-2f);
      const float trained = engine.evaluate(zero::micro_batch_of(held_out));
      std::lock_guard lock(mu);
      before[std::size_t(comm.rank())] = first;
      after[std::size_t(comm.rank())] = trained;
    });
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(std::memcmp(&before[std::size_t(r)], &base_loss, sizeof base_loss), 0)
          << "stage " << stage << " rank " << r << ": " << before[std::size_t(r)] << " vs "
          << base_loss;
      EXPECT_NE(after[std::size_t(r)], base_loss) << "stage " << stage;
    }
  }
}

// The bytes each rank moves, against the predictions `measure` prints: at stage 3 the base's
// buckets are gathered twice a step beside the adapters'; below it the base never moves.
TEST(EngineLora, EachRankSendsWhatThePredictionCounts) {
  const model::GptConfig c = small_lora_gpt();
  const auto text =
      std::make_shared<const data::TextData>(data::TextData::default_corpus(c.seq_len));
  const data::TextWindows samples(text, 1234);
  const int steps = 2;
  for (int stage = 0; stage <= 3; ++stage) {
    for (int ranks : {2, 3}) {
      zero::EngineOptions o;
      o.stage = stage_from_number(stage);
      o.micro_batch = 1;
      o.bucket_bytes = 600;
      const testing::RankBytes bytes = testing::gpt_step_bytes(c, o, samples, ranks, steps);
      predict::EngineRun run;
      run.model = predict::GptShape{.layers = 2,
                                    .heads = 2,
                                    .hidden = 16,
                                    .seq_len = 8,
                                    .lora_rank = 4,
                                    .lora_targets = model::kLoraAllTargets};
      run.stage = o.stage;
      run.ranks = ranks;
      run.bucket_bytes = o.bucket_bytes;
      testing::expect_bytes_predicted(bytes, run, steps);
    }
  }
}

TEST(EngineLora, ZeroPlusPlusIsRefusedWithAFrozenBase) {
  zero::EngineOptions o;
  o.stage = Stage::zero3;
  o.zeropp.qwz = true;
  const auto text = std::make_shared<const data::TextData>(
      data::TextData::default_corpus(small_lora_gpt().seq_len));
  const data::TextWindows samples(text, 1234);
  EXPECT_THROW(comm::run_thread_ranks(1, {},
                                      [&](comm::Communicator& comm) {
                                        model::GptModel model(small_lora_gpt());
                                        zero::Engine engine(model, comm, samples, o);
                                      }),
               UsageError);
}

}  // namespace
}  // namespace zerodp
