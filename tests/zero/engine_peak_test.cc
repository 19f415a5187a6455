// The planner's peak (predict/peak.h) against the engine's ledger: for every stage, N = 1..4,
// both models, with and without prefetch, activation checkpointing and gradient
// accumulation, the predicted bytes of every category at the peak, the peak and the moment
// are exactly what the ledger measured over real steps. And a budget: a rank given exactly
// its predicted peak trains; one byte less is refused with the one-line message.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <variant>

#include "zerodp/data/samples.h"
#include "zerodp/data/text_data.h"
#include "zerodp/model/gpt.h"
#include "zerodp/model/mlp.h"
#include "zerodp/predict/peak.h"
#include "zerodp/zero/engine.h"

namespace zerodp {
namespace {

// Small shapes whose units span several buckets with uneven shards (bucket 1 KiB = 512
// elements), so every per-rank term differs between ranks somewhere.
constexpr std::uint64_t kBucketBytes = 1024;
const predict::GptShape kPeakGpt{.layers = 2, .heads = 2, .hidden = 16, .seq_len = 8};
const predict::MlpShape kPeakMlp{.width = 24, .depth = 3};

struct Measured {
  std::vector<Ledger> ledgers;  // per rank, after the steps
};

// Trains `steps` steps on run.ranks thread ranks; run.rank_memory is the budget.
Measured train(const predict::EngineRun& run, std::size_t budget, int steps = 2,
               Optimizer optimizer = Optimizer::adam) {
  zero::EngineOptions o;
  o.optimizer = optimizer;
  o.stage = run.stage;
  o.micro_batch = run.micro_batch;
  o.grad_accum = static_cast<int>(run.grad_accum);
  o.bucket_bytes = run.bucket_bytes;
  o.prefetch = run.prefetch;
  o.zeropp = run.zeropp;
  o.qwz_block = run.qwz_block;
  o.ranks_per_host = run.zeropp.uses_hosts() ? run.ranks_per_host : 0;
  o.rank_memory = budget;
  if (const auto* g = std::get_if<predict::GptShape>(&run.model)) {
    o.frozen_nf4 = g->nf4;
    o.frozen_double_quant = g->double_quant;
  }
  Measured m;
  m.ledgers.resize(run.ranks);
  std::mutex mu;
  std::shared_ptr<const data::TextData> text;
  if (const auto* g = std::get_if<predict::GptShape>(&run.model)) {
    text = std::make_shared<const data::TextData>(data::TextData::default_corpus(g->seq_len));
  }
  comm::run_thread_ranks(run.ranks, {}, [&](comm::Communicator& comm) {
    std::unique_ptr<model::Model> model;
    std::unique_ptr<data::SampleSource> samples;
    if (const auto* g = std::get_if<predict::GptShape>(&run.model)) {
      model::GptConfig c;
      c.layers = int(g->layers), c.heads = int(g->heads), c.hidden = int(g->hidden);
      c.seq_len = int(g->seq_len), c.checkpoint_activations = g->checkpoint_activations;
      c.compute = g->bf16_compute ? model::Compute::bf16 : model::Compute::fp32;
      c.lora_rank = int(g->lora_rank), c.lora_targets = g->lora_targets;
      auto gpt = std::make_unique<model::GptModel>(c);
      gpt->set_threads(run.model_threads);
      model = std::move(gpt);
      samples = std::make_unique<data::TextWindows>(text, 1234);
    } else {
      const auto& s = std::get<predict::MlpShape>(run.model);
      model = std::make_unique<model::Mlp>(model::MlpConfig{s.width, int(s.depth)});
      samples = std::make_unique<data::SyntheticRegression>(s.width, 1234);
    }
    zero::Engine engine(*model, comm, *samples, o);
    for (int s = 0; s < steps; ++s) engine.step(1e-3f);
    engine.flush();
    std::lock_guard lock(mu);
    m.ledgers[comm.rank()] = engine.ledger();
  });
  return m;
}

using PeakCase = std::tuple<bool /*gpt*/, int /*stage*/, int /*ranks*/, bool /*prefetch*/,
                            bool /*checkpointing*/, int /*grad_accum*/>;

predict::EngineRun run_of(const PeakCase& c) {
  const auto [gpt, stage, ranks, prefetch, checkpointing, accum] = c;
  predict::EngineRun run;
  if (gpt) {
    predict::GptShape g = kPeakGpt;
    g.checkpoint_activations = checkpointing;
    run.model = g;
  } else {
    run.model = kPeakMlp;
  }
  run.stage = stage_from_number(stage);
  run.ranks = ranks;
  run.micro_batch = 3;
  run.grad_accum = accum;
  run.bucket_bytes = kBucketBytes;
  run.prefetch = prefetch;
  return run;
}

class Peak : public ::testing::TestWithParam<PeakCase> {};

TEST_P(Peak, PredictionEqualsTheLedgerOnEveryRank) {
  const predict::EngineRun run = run_of(GetParam());
  const std::vector<predict::RankPeak> predicted = predict::predict_peak(run);
  const Measured measured = train(run, 0);
  for (int r = 0; r < run.ranks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const Ledger& ledger = measured.ledgers[r];
    for (int c = 0; c < kCategoryCount; ++c) {
      const auto cat = static_cast<Category>(c);
      EXPECT_EQ(predicted[r][cat], ledger.at_peak(cat)) << category_name(cat);
      // Nothing is freed once allocated: at the peak, every category holds its own peak.
      EXPECT_EQ(ledger.at_peak(cat), ledger.peak(cat)) << category_name(cat);
    }
    EXPECT_EQ(predicted[r].peak_bytes, ledger.peak_total());
    EXPECT_EQ(phase_name(predicted[r].moment), phase_name(ledger.peak_phase()));
    EXPECT_LE(predicted[r].peak_bytes, predicted[0].peak_bytes);  // rank 0 holds the most
  }
}

std::string case_name(const ::testing::TestParamInfo<PeakCase>& info) {
  const auto [gpt, stage, ranks, prefetch, checkpointing, accum] = info.param;
  return std::string(gpt ? "gpt" : "mlp") + "_stage" + std::to_string(stage) + "_n" +
         std::to_string(ranks) + (prefetch ? "" : "_noprefetch") +
         (checkpointing ? "_checkpointing" : "") + "_accum" + std::to_string(accum);
}

INSTANTIATE_TEST_SUITE_P(Gpt, Peak,
                         ::testing::Combine(::testing::Values(true), ::testing::Range(0, 4),
                                            ::testing::Range(1, 5), ::testing::Bool(),
                                            ::testing::Bool(), ::testing::Values(1, 2)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Mlp, Peak,
                         ::testing::Combine(::testing::Values(false), ::testing::Range(0, 4),
                                            ::testing::Range(1, 5), ::testing::Bool(),
                                            ::testing::Values(false), ::testing::Values(1, 2)),
                         case_name);

// 8-bit AdamW's states depend on the tensors and on where the chunks cut the blocks: the
// prediction lays them out as the engine does, to the byte, on the GPT (whose LayerNorms and
// biases keep fp32 states) and the MLP, at every stage, with whole and cut blocks.
TEST(Peak, EightBitStatesArePredictedToTheByte) {
  for (Optimizer id : {Optimizer::adam_8bit, Optimizer::lion_8bit})
    for (bool gpt : {false, true}) {
      for (int stage = 0; stage <= 3; ++stage) {
        for (int ranks : {1, 3}) {
          predict::EngineRun run = run_of({gpt, stage, ranks, true, false, 1});
          // Tensors of 4096 elements and more, so that most states are 8-bit.
          if (gpt) {
            predict::GptShape g = kPeakGpt;
            g.hidden = 64;
            run.model = g;
          } else {
            run.model = predict::MlpShape{.width = 64, .depth = 3};
          }
          run.blockwise = &optimizer_row(id);
          const std::vector<predict::RankPeak> predicted = predict::predict_peak(run);
          const Measured measured = train(run, 0, 2, id);
          for (int r = 0; r < ranks; ++r) {
            SCOPED_TRACE(std::string(optimizer_row(id).word) + (gpt ? " gpt" : " mlp") + " stage " +
                         std::to_string(stage) + " rank " + std::to_string(r));
            const Ledger& ledger = measured.ledgers[r];
            // About a quarter of an fp32 slot: a byte an element and the blocks' absmax.
            EXPECT_LT(ledger.at_peak(Category::optim_m), ledger.at_peak(Category::master32) / 3);
            EXPECT_GT(ledger.at_peak(Category::optim_m), 0u);
            EXPECT_EQ(ledger.at_peak(Category::optim_v) > 0, id == Optimizer::adam_8bit);
            for (int c = 0; c < kCategoryCount; ++c) {
              const auto cat = static_cast<Category>(c);
              EXPECT_EQ(predicted[r][cat], ledger.at_peak(cat)) << category_name(cat);
            }
            EXPECT_EQ(predicted[r].peak_bytes, ledger.peak_total());
          }
        }
      }
    }
}

// Adafactor's states are a matrix's rows and columns on every rank holding part of it and a
// vector's elements where they are; its scratch holds the exact sums and, when buckets cut
// tensors between ranks, every rank's part of them. Predicted as the engine lays them out, to the
// byte, on the GPT and the MLP at every stage, with tensors cut (buckets of 512 elements) and,
// on one rank, whole.
TEST(Peak, AdafactorStatesArePredictedToTheByte) {
  for (bool gpt : {false, true}) {
    for (int stage = 0; stage <= 3; ++stage) {
      for (int ranks : {1, 3, 4}) {
        predict::EngineRun run = run_of({gpt, stage, ranks, true, false, 1});
        run.factored = &optimizer_row(Optimizer::adafactor);
        const std::vector<predict::RankPeak> predicted = predict::predict_peak(run);
        const Measured measured = train(run, 0, 2, Optimizer::adafactor);
        for (int r = 0; r < ranks; ++r) {
          SCOPED_TRACE(std::string(gpt ? "gpt" : "mlp") + " stage " + std::to_string(stage) +
                       " N " + std::to_string(ranks) + " rank " + std::to_string(r));
          const Ledger& ledger = measured.ledgers[r];
          // Rows and columns instead of an fp32 slot: well under the master's elements (the
          // MLP's 24 x 24 weights keep 48 values of 576; its biases one each).
          EXPECT_EQ(ledger.at_peak(Category::optim_m), 0u);
          EXPECT_GT(ledger.at_peak(Category::optim_v), 0u);
          if (stage == 0) {
            EXPECT_LT(ledger.at_peak(Category::optim_v), ledger.at_peak(Category::master32) / 4);
          }
          for (int c = 0; c < kCategoryCount; ++c) {
            const auto cat = static_cast<Category>(c);
            EXPECT_EQ(predicted[r][cat], ledger.at_peak(cat)) << category_name(cat);
          }
          EXPECT_EQ(predicted[r].peak_bytes, ledger.peak_total());
        }
      }
    }
  }
}

// Each optimizer's slots, counted as the ledger counts them (one optim_m for Lion's m and SGD's
// buffer, none for SGD): the prediction is exact at every stage and N.
TEST(Peak, EveryOptimizersSlotsArePredictedToTheByte) {
  for (Optimizer id : {Optimizer::lion, Optimizer::sgd_momentum, Optimizer::sgd}) {
    for (int stage = 0; stage <= 3; ++stage) {
      for (int ranks : {1, 3}) {
        predict::EngineRun run = run_of({false, stage, ranks, true, false, 1});
        run.m_slots = id == Optimizer::sgd ? 0 : 1;
        run.v_slots = 0;
        const std::vector<predict::RankPeak> predicted = predict::predict_peak(run);
        const Measured measured = train(run, 0, 2, id);
        for (int r = 0; r < ranks; ++r) {
          SCOPED_TRACE(std::string(optimizer_row(id).word) + " stage " + std::to_string(stage) +
                       " rank " + std::to_string(r));
          const Ledger& ledger = measured.ledgers[r];
          EXPECT_EQ(ledger.at_peak(Category::optim_m),
                    id == Optimizer::sgd ? 0u : ledger.at_peak(Category::master32));
          EXPECT_EQ(ledger.at_peak(Category::optim_v), 0u);
          for (int c = 0; c < kCategoryCount; ++c) {
            const auto cat = static_cast<Category>(c);
            EXPECT_EQ(predicted[r][cat], ledger.at_peak(cat)) << category_name(cat);
          }
          EXPECT_EQ(predicted[r].peak_bytes, ledger.peak_total());
        }
      }
    }
  }
}

// bf16 compute adds each model thread's product scratch to the activations: still exact, at
// every stage, with and without checkpointing.
TEST(PeakBf16, PredictionEqualsTheLedgerOnEveryRank) {
  for (int stage = 0; stage < 4; ++stage) {
    for (const bool checkpointing : {false, true}) {
      SCOPED_TRACE("stage " + std::to_string(stage) + (checkpointing ? ", checkpointing" : ""));
      predict::EngineRun run = run_of({true, stage, 3, true, checkpointing, 1});
      std::get<predict::GptShape>(run.model).bf16_compute = true;
      const std::vector<predict::RankPeak> predicted = predict::predict_peak(run);
      const Measured measured = train(run, 0);
      for (int r = 0; r < run.ranks; ++r) {
        EXPECT_EQ(predicted[r].peak_bytes, measured.ledgers[r].peak_total()) << "rank " << r;
        EXPECT_EQ(predicted[r][Category::activations],
                  measured.ledgers[r].at_peak(Category::activations))
            << "rank " << r;
      }
    }
  }
}

// Every rank's ledger: each category at the peak, the peak and the moment it was reached.
void expect_every_rank_predicted(const std::vector<predict::RankPeak>& predicted,
                                 const Measured& measured) {
  for (std::size_t r = 0; r < predicted.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    for (int c = 0; c < kCategoryCount; ++c) {
      const auto cat = static_cast<Category>(c);
      EXPECT_EQ(predicted[r][cat], measured.ledgers[r].at_peak(cat)) << category_name(cat);
    }
    EXPECT_EQ(predicted[r].peak_bytes, measured.ledgers[r].peak_total());
    EXPECT_EQ(phase_name(predicted[r].moment), phase_name(measured.ledgers[r].peak_phase()));
  }
}

// A LoRA GPT: the adapters are the trained layout, the base a frozen one held in 16 bits
// beside it (sharded and gathered at stage 3). Exact at every stage and N, for all four
// projections and for two, with checkpointing, bf16 compute and model threads.
TEST(PeakLora, PredictionEqualsTheLedgerOnEveryRank) {
  for (int stage = 0; stage < 4; ++stage) {
    for (int ranks : {1, 2, 3}) {
      for (const unsigned targets : {15u, unsigned(model::kLoraAttn | model::kLoraFcProj)}) {
        const bool variant = targets != 15u;
        SCOPED_TRACE("stage " + std::to_string(stage) + ", " + std::to_string(ranks) +
                     " ranks, targets " + std::to_string(targets));
        predict::EngineRun run = run_of({true, stage, ranks, !variant, variant, 1});
        auto& g = std::get<predict::GptShape>(run.model);
        g.lora_rank = 3;
        g.lora_targets = targets;
        g.bf16_compute = variant;
        run.model_threads = variant ? 2 : 1;
        const std::vector<predict::RankPeak> predicted = predict::predict_peak(run);
        const Measured measured = train(run, 0);
        expect_every_rank_predicted(predicted, measured);
      }
    }
  }
}

// QLoRA: the block weights of the base held as NF4 codes (sharded and gathered at stage 3 as
// words) with their quantization state whole on every rank. Hidden 72 gives a weight of 324
// blocks (two groups of 256 for double quantization); hidden 37 (one head) weights of an odd
// number of elements, the last block short and the last word half padding.
TEST(PeakQlora, PredictionEqualsTheLedgerOnEveryRank) {
  struct Shape {
    std::uint64_t heads, hidden;
    bool double_quant;
  };
  for (int stage = 0; stage < 4; ++stage) {
    for (int ranks : {1, 3}) {
      for (const Shape shape : {Shape{2, 72, true}, Shape{1, 37, true}, Shape{1, 37, false}}) {
        const bool double_quant = shape.double_quant;
        SCOPED_TRACE("stage " + std::to_string(stage) + ", " + std::to_string(ranks) +
                     " ranks, hidden " + std::to_string(shape.hidden) + ", double quantization " +
                     std::to_string(double_quant));
        predict::EngineRun run = run_of({true, stage, ranks, true, false, 1});
        auto& g = std::get<predict::GptShape>(run.model);
        g.heads = shape.heads;
        g.hidden = shape.hidden;
        g.lora_rank = 2;
        g.lora_targets = 15;
        g.nf4 = true;
        g.double_quant = double_quant;
        run.bucket_bytes = 2000;  // buckets that cut a unit's words mid-weight
        const std::vector<predict::RankPeak> predicted = predict::predict_peak(run);
        const Measured measured = train(run, 0);
        expect_every_rank_predicted(predicted, measured);
        // The codes take a quarter of the 16-bit base's words.
        g.nf4 = false;
        EXPECT_LT(predicted[0][Category::params16],
                  predict::predict_rank_peak(run, 0)[Category::params16]);
      }
    }
  }
}

// qwZ's staging rides with each gather slot, hpZ's secondary copy is held from setup: still
// exact, for blocks that cut chunks short and hosts of one rank, two, or all.
class PeakQwz : public ::testing::TestWithParam<std::tuple<bool, int, bool, int, int, bool>> {};

TEST_P(PeakQwz, PredictionEqualsTheLedgerOnEveryRank) {
  const auto [gpt, ranks, prefetch, block, hosts, qgz] = GetParam();
  predict::EngineRun run = run_of({gpt, 3, ranks, prefetch, false, 1});
  run.zeropp.qwz = block > 0;
  run.qwz_block = block > 0 ? block : 256;
  // hosts 0: hpZ over all ranks (one host) or, with qwZ, off; 1: hosts of one rank; 2: of two
  // where the ranks pair up, else one host.
  const int paired = ranks % 2 == 0 ? 2 : ranks;
  run.zeropp.hpz = hosts != 0 || block == 0;
  run.ranks_per_host = hosts == 1 ? 1 : hosts == 2 ? paired : ranks;
  // qgZ over the same hosts (all ranks when hpZ is off), with qwZ's block.
  run.zeropp.qgz = qgz;
  const std::vector<predict::RankPeak> predicted = predict::predict_peak(run);
  const Measured measured = train(run, 0);
  for (int r = 0; r < run.ranks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    for (int c = 0; c < kCategoryCount; ++c) {
      const auto cat = static_cast<Category>(c);
      EXPECT_EQ(predicted[r][cat], measured.ledgers[r].at_peak(cat)) << category_name(cat);
    }
    EXPECT_EQ(predicted[r].peak_bytes, measured.ledgers[r].peak_total());
  }
  // The staging and the copy are there: more than the plain run's gathered params.
  run.zeropp.qwz = false;
  run.zeropp = {};
  EXPECT_GT(predicted[0][Category::gathered_params],
            predict::predict_rank_peak(run, 0)[Category::gathered_params]);
}

// block 0: hpZ alone.
INSTANTIATE_TEST_SUITE_P(Models, PeakQwz,
                         ::testing::Combine(::testing::Bool(), ::testing::Range(1, 5),
                                            ::testing::Bool(), ::testing::Values(0, 5, 256),
                                            ::testing::Values(0, 1, 2), ::testing::Bool()));

// The boundary is exact: the predicted peak as the budget trains; a byte less is refused, at
// the allocation that would cross it, with rank, category and bytes in one line.
TEST(PeakBudget, ThePredictedPeakTrainsAndOneByteLessIsRefused) {
  for (const int stage : {0, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const predict::EngineRun run = run_of({true, stage, 2, true, false, 1});
    const std::uint64_t peak = predict::predict_rank_peak(run, 0).peak_bytes;
    EXPECT_EQ(train(run, peak).ledgers[0].peak_total(), peak);
    for (const std::uint64_t budget : {peak - 1, peak - peak / 50}) {
      try {
        train(run, budget);
        ADD_FAILURE() << "a budget of " << budget << " below the peak " << peak << " trained";
      } catch (const BudgetExceeded& e) {
        EXPECT_LE(e.held, budget);
        EXPECT_GT(e.held + e.asked, budget);
        EXPECT_EQ(e.allowed, budget);
        const std::string what = e.what();
        EXPECT_NE(what.find("rank "), std::string::npos) << what;
        EXPECT_NE(what.find(std::string(category_name(e.category))), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      } catch (const Error& e) {
        // Another rank's refusal reached this one as the group's failure: it names it.
        EXPECT_NE(std::string(e.what()).find("memory budget"), std::string::npos) << e.what();
      }
    }
  }
}

// The formulas of predict/peak.h against the models themselves.
TEST(PeakFormulas, LayoutAndActivationsAreWhatTheModelsAllocate) {
  for (const auto& [checkpointing, bf16] : {std::pair{false, false}, std::pair{true, false},
                                            std::pair{false, true}, std::pair{true, true}}) {
    for (const int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(bf16 ? "bf16" : "fp32") + " compute, " + std::to_string(threads) +
                   " threads" + (checkpointing ? ", checkpointing" : ""));
      predict::GptShape g = kPeakGpt;
      g.checkpoint_activations = checkpointing;
      g.bf16_compute = bf16;
      model::GptConfig c;
      c.layers = int(g.layers), c.heads = int(g.heads), c.hidden = int(g.hidden);
      c.seq_len = int(g.seq_len), c.checkpoint_activations = checkpointing;
      c.compute = bf16 ? model::Compute::bf16 : model::Compute::fp32;
      model::GptModel model(c);
      Ledger ledger;
      model.set_ledger(&ledger);
      model.set_threads(threads);
      const std::vector<std::uint8_t> tokens(5 * (c.seq_len + 1), 7);
      model.begin_micro_batch({.samples = 5, .tokens = tokens});
      EXPECT_EQ(ledger.live(Category::activations), predict::gpt_activation_bytes(g, 5, threads));
      EXPECT_EQ(ledger.live(Category::activations), model.activation_bytes());
      model.set_ledger(nullptr);
      EXPECT_EQ(ledger.live_total(), 0u);  // the counts moved out with the model
      EXPECT_EQ(predict::param_count(g), model.param_count());
      const predict::UnitLayout layout = predict::unit_layout(g);
      ASSERT_EQ(layout.counts.size(), model.units().size());
      for (std::size_t u = 0; u < layout.counts.size(); ++u) {
        EXPECT_EQ(layout.counts[u], model.units()[u].param_count);
        EXPECT_EQ(layout.reads[u], model.units()[u].reads);
      }
    }
  }
  model::Mlp mlp({kPeakMlp.width, int(kPeakMlp.depth)});
  Ledger ledger;
  mlp.set_ledger(&ledger);
  const std::vector<float> x(4 * kPeakMlp.width, 0.5f);
  mlp.begin_micro_batch({.samples = 4, .inputs = x, .targets = x});
  EXPECT_EQ(ledger.live(Category::activations), predict::mlp_activation_bytes(kPeakMlp, 4));
  EXPECT_EQ(predict::param_count(kPeakMlp), mlp.param_count());
  mlp.set_ledger(nullptr);
}

}  // namespace
}  // namespace zerodp

namespace zerodp {
namespace {

// The seed's Example 8 (cell H) and Example 5 (cell E), proven by runs at a small scale: a
// budget B under which no stage fits at N = 4, and for each stage the planner's least N, at
// which the engine trains, while at one rank fewer the budget refuses it. B is ZeRO-3's
// predicted peak at N = 6, so "ZeRO-3 needs N = 6" is the planner's own answer to check.
TEST(PeakBudget, SeedExample8ScaledNoStageFitsAtFourRanksAndEachLeastNIsProvenByRuns) {
  predict::EngineRun run;
  run.model = predict::MlpShape{.width = 64, .depth = 24};  // 99,840 parameters
  run.micro_batch = 2;
  run.bucket_bytes = 8 << 10;
  run.stage = Stage::zero3;
  run.ranks = 6;
  const std::uint64_t budget = predict::predict_rank_peak(run, 0).peak_bytes;
  run.ranks = 4;
  EXPECT_FALSE(predict::cheapest_stage_that_fits(run, budget).has_value());
  constexpr int kMaxRanks = 8;  // thread ranks this test is willing to start
  for (Stage stage : kStages) {
    SCOPED_TRACE(std::string(stage_name(stage)));
    run.stage = stage;
    const std::optional<int> least = predict::least_ranks_that_fit(run, budget, kMaxRanks);
    if (stage == Stage::zero3) {
      EXPECT_EQ(least, 6);
    }
    // Stages 0-2 keep params (and 0-1 grads) whole: at most N they still do not fit here.
    if (!least) {
      run.ranks = kMaxRanks;
      EXPECT_THROW(train(run, budget, 1), Error);
      continue;
    }
    run.ranks = *least;
    EXPECT_LE(train(run, budget, 1).ledgers[0].peak_total(), budget);
    run.ranks = *least - 1;
    if (run.ranks >= 1) {
      EXPECT_THROW(train(run, budget, 1), Error);
    }
  }
}

}  // namespace
}  // namespace zerodp
