// The engine with an NF4 base (QLoRA, EngineOptions::frozen_nf4): the block weights are held as
// their NF4 codes, four to a 16-bit word, and each layer computes with them dequantized and
// rounded to the compute precision. So a QLoRA run trains, to the bit, what a 16-bit LoRA run
// trains beside the base that optim/nf4.h's quantize_nf4 and dequantize_nf4 (the NumPy
// reference's, bit for bit: tests/optim/nf4_test.cc) make of it; every stage and rank count
// trains the same adapters; and stage 3 gathers a quarter of the 16-bit base's bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "zero/step_bytes_testing.h"
#include "zerodp/comm/communicator.h"
#include "zerodp/common/dtype.h"
#include "zerodp/data/samples.h"
#include "zerodp/data/text_data.h"
#include "zerodp/model/gpt.h"
#include "zerodp/optim/nf4.h"
#include "zerodp/predict/peak.h"
#include "zerodp/zero/engine.h"

namespace zerodp {
namespace {

// Hidden 36: the block weights (3,888, 1,296, 5,184 and 5,184 elements) end in a short block.
model::GptConfig qlora_gpt() {
  model::GptConfig c;
  c.layers = 2, c.heads = 2, c.hidden = 36, c.seq_len = 8;
  c.lora_rank = 4;
  c.lora_alpha = 8.0f;
  c.lora_targets = model::kLoraAllTargets;
  return c;
}

struct QloraRun {
  std::vector<float> adapters;  // consolidated fp32 adapters after the last step
  std::vector<float> losses;    // the held-out loss before training, then each step's
};

// Trains `steps` steps on `ranks` ranks beside `base` (the frozen layout's fp32 values).
QloraRun train_beside(const std::vector<float>& base, const zero::EngineOptions& o, int ranks,
                      int steps) {
  const model::GptConfig c = qlora_gpt();
  const auto text =
      std::make_shared<const data::TextData>(data::TextData::default_corpus(c.seq_len));
  const data::TextWindows samples(text, 1234);
  data::Batch held_out;
  samples.draw(data::Split::validation, 0, 2, held_out);
  QloraRun run;
  std::mutex mu;
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    model::GptModel model(c);
    zero::Engine engine(model, comm, samples, o);
    engine.import_frozen([&](zero::FlatRange range, float* values, float*, float*) {
      std::copy_n(base.begin() + std::ptrdiff_t(range.offset), range.count, values);
    });
    std::vector<float> losses = {engine.evaluate(zero::micro_batch_of(held_out))};
    for (int s = 0; s < steps; ++s) losses.push_back(engine.step(3e-2f).loss);
    engine.flush();
    std::vector<float> adapters = engine.gather_master();
    std::lock_guard lock(mu);
    if (comm.rank() == 0) {
      run.adapters = std::move(adapters);
      run.losses = std::move(losses);
    }
  });
  return run;
}

// A base of the GPT's shape: its own initialisation, with weights of three scales so blocks'
// absmax differ.
std::vector<float> some_base() {
  const model::GptModel model(qlora_gpt());
  std::vector<float> base(qlora_gpt().param_count());
  for (std::size_t u = 0; u < model.units().size(); ++u) {
    const model::UnitInfo& unit = model.units()[u];
    model.init_frozen_unit(int(u), {base.data() + unit.frozen_offset, unit.frozen_count}, 7);
  }
  for (std::size_t i = 0; i < base.size(); ++i) base[i] *= 1.0f + float(i / 64 % 3);
  return base;
}

// What bitsandbytes' 16-bit compute copy holds: each linear weight quantized, dequantized and
// rounded to bf16.
std::vector<float> dequantized(std::vector<float> base, bool double_quant) {
  const model::GptModel model(qlora_gpt());
  for (const model::UnitInfo& unit : model.units()) {
    for (const model::TensorInfo& t : unit.frozen_tensors) {
      if (!t.linear) continue;
      std::span<float> w(base.data() + unit.frozen_offset + t.offset, t.shape[0] * t.shape[1]);
      optim::dequantize_nf4(optim::quantize_nf4(w, double_quant), w);
      for (float& x : w) x = bf16_to_float(float_to_bf16(x));
    }
  }
  return base;
}

bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(EngineQlora, TrainsWhatA16BitRunTrainsBesideTheDequantizedBase) {
  const std::vector<float> base = some_base();
  for (const bool double_quant : {true, false}) {
    for (const auto& [stage, ranks] : {std::pair{0, 1}, std::pair{3, 2}}) {
      SCOPED_TRACE("double quantization " + std::to_string(double_quant) + ", stage " +
                   std::to_string(stage) + ", " + std::to_string(ranks) + " ranks");
      zero::EngineOptions o;
      o.stage = stage_from_number(stage);
      o.micro_batch = 2;
      o.bucket_bytes = 600;
      const QloraRun plain = train_beside(dequantized(base, double_quant), o, ranks, 3);
      o.frozen_nf4 = true;
      o.frozen_double_quant = double_quant;
      const QloraRun nf4 = train_beside(base, o, ranks, 3);
      EXPECT_TRUE(bits_equal(nf4.losses, plain.losses));
      EXPECT_TRUE(bits_equal(nf4.adapters, plain.adapters));
      EXPECT_LT(nf4.losses.back(), nf4.losses[1]);
      // And the quantization is felt: the 16-bit base's loss is another.
      o.frozen_nf4 = false;
      EXPECT_NE(train_beside(base, o, ranks, 0).losses[0], nf4.losses[0]);
    }
  }
}

TEST(EngineQlora, EveryStageAndRankCountTrainsTheSameAdaptersToTheBit) {
  const std::vector<float> base = some_base();
  zero::EngineOptions o;
  o.micro_batch = 2;
  o.bucket_bytes = 600;  // 300 words: a weight's codes cut across buckets and ranks
  o.frozen_nf4 = true;
  for (int ranks : {1, 2, 3}) {
    o.stage = Stage::dp;
    const QloraRun reference = train_beside(base, o, ranks, 4);  // ranks x 2 samples a step
    for (int stage = 1; stage <= 3; ++stage) {
      o.stage = stage_from_number(stage);
      const QloraRun run = train_beside(base, o, ranks, 4);
      EXPECT_TRUE(bits_equal(run.adapters, reference.adapters))
          << "stage " << stage << ", " << ranks << " ranks";
    }
  }
}

// At stage 3 each rank gathers the base's codes twice a step: a quarter of the 16-bit words
// of each weight, as predicted to the byte.
TEST(EngineQlora, EachRankSendsWhatThePredictionCounts) {
  const model::GptConfig c = qlora_gpt();
  const auto text =
      std::make_shared<const data::TextData>(data::TextData::default_corpus(c.seq_len));
  const data::TextWindows samples(text, 1234);
  const int steps = 2;
  for (int stage : {0, 3}) {
    for (int ranks : {2, 3}) {
      zero::EngineOptions o;
      o.stage = stage_from_number(stage);
      o.micro_batch = 1;
      o.bucket_bytes = 600;
      o.frozen_nf4 = true;
      const testing::RankBytes bytes = testing::gpt_step_bytes(c, o, samples, ranks, steps);
      predict::EngineRun run;
      run.model = predict::GptShape{.layers = 2,
                                    .heads = 2,
                                    .hidden = 36,
                                    .seq_len = 8,
                                    .lora_rank = 4,
                                    .lora_targets = model::kLoraAllTargets,
                                    .nf4 = true};
      run.stage = o.stage;
      run.ranks = ranks;
      run.bucket_bytes = o.bucket_bytes;
      testing::expect_bytes_predicted(bytes, run, steps);
      // Against the 16-bit base: at stage 3 the base's gathers shrink about fourfold.
      auto& g = std::get<predict::GptShape>(run.model);
      g.nf4 = false;
      if (stage == 3) EXPECT_LT(bytes.ring[0], steps * predict::predict_rank_ring_bytes(run, 0));
    }
  }
}

}  // namespace
}  // namespace zerodp
