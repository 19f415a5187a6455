// The GPT as a Model: layout, initialisation, the whole gradient against finite differences,
// training, activation checkpointing, the data contract across ranks.
#include "zerodp/model/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/finite_difference.h"
#include "model/gpt_terms.h"
#include "model/gpt_testing.h"
#include "testing/tolerance.h"
#include "zerodp/common/error.h"
#include "zerodp/data/samples.h"

namespace zerodp::model {
namespace {

using testing::fd_check;
using testing::random_vector;

using gpt_testing::begin_windows;
using gpt_testing::config;
using gpt_testing::random_windows;
using gpt_testing::usage_error_of;

GptConfig tiny_config() {
  return config(2, 2, 8, 4);
}

std::vector<std::uint8_t> text_bytes(const std::string& s, int repeat) {
  std::vector<std::uint8_t> out;
  for (int r = 0; r < repeat; ++r) out.insert(out.end(), s.begin(), s.end());
  return out;
}

TEST(GptConfig, ValidateNamesTheFlag) {
  EXPECT_EQ(usage_error_of(GptConfig{}), "");
  GptConfig c;
  c.layers = 0;
  EXPECT_NE(usage_error_of(c).find("layers"), std::string::npos);
  c = {};
  c.heads = 0;
  EXPECT_NE(usage_error_of(c).find("heads"), std::string::npos);
  c = {};
  c.hidden = -3;
  EXPECT_NE(usage_error_of(c).find("hidden"), std::string::npos);
  c = {};
  c.seq_len = 0;
  EXPECT_NE(usage_error_of(c).find("seq_len"), std::string::npos);
  c = {};
  c.hidden = 10;
  c.heads = 4;
  const std::string divisible = usage_error_of(c);
  EXPECT_NE(divisible.find("hidden must be divisible by heads"), std::string::npos) << divisible;
  c = {};
  c.vocab = 512;
  EXPECT_NE(usage_error_of(c).find("vocab"), std::string::npos);
  c = {};
  c.layers = 0;
  EXPECT_THROW(GptModel{c}, UsageError);
}

TEST(GptConfig, ParamCountOfTheBenchmarkConfiguration) {
  const GptConfig c;  // 4 layers, 4 heads, hidden 256, context 128: the figure
  EXPECT_EQ(c.param_count(), 3257856u);
  GptModel model(c);
  EXPECT_EQ(model.param_count(), 3257856u);
}

TEST(GptModel, UnitsTileTheLayoutWithHuggingFaceNames) {
  const GptConfig c = tiny_config();
  GptModel model(c);
  const auto& units = model.units();
  ASSERT_EQ(units.size(), 4u);  // embeddings, h.0, h.1, final
  std::size_t next = 0;
  for (const auto& u : units) {
    EXPECT_EQ(u.param_offset, next) << u.name;
    std::size_t tensor_next = 0;
    for (const auto& t : u.tensors) {
      EXPECT_EQ(t.offset, tensor_next) << t.name;
      std::size_t n = 1;
      for (auto d : t.shape) n *= d;
      tensor_next += n;
    }
    EXPECT_EQ(tensor_next, u.param_count) << u.name;
    next += u.param_count;
  }
  EXPECT_EQ(next, c.param_count());
  EXPECT_EQ(units[0].tensors[0].name, "wte.weight");
  EXPECT_EQ(units[0].tensors[0].shape, (std::vector<std::size_t>{256, 8}));
  EXPECT_EQ(units[0].tensors[1].name, "wpe.weight");
  EXPECT_EQ(units[0].tensors[1].shape, (std::vector<std::size_t>{4, 8}));
  const std::vector<std::string> block = {
      "ln_1.weight",        "ln_1.bias",        "attn.c_attn.weight", "attn.c_attn.bias",
      "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",        "ln_2.bias",
      "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
  for (int l = 0; l < 2; ++l) {
    const auto& u = units[1 + l];
    EXPECT_EQ(u.name, "h." + std::to_string(l));
    ASSERT_EQ(u.tensors.size(), block.size());
    for (std::size_t i = 0; i < block.size(); ++i) {
      EXPECT_EQ(u.tensors[i].name, "h." + std::to_string(l) + "." + block[i]);
    }
    EXPECT_TRUE(u.reads.empty());
  }
  EXPECT_EQ(units[1].tensors[2].shape, (std::vector<std::size_t>{24, 8}));  // [out, in]
  EXPECT_EQ(units[1].tensors[10].shape, (std::vector<std::size_t>{8, 32}));
  EXPECT_EQ(units[3].name, "final");
  EXPECT_EQ(units[3].reads, (std::vector<int>{0}));  // the tied LM head
  EXPECT_EQ(units[3].tensors[0].name, "ln_f.weight");
  EXPECT_EQ(units[3].tensors[1].name, "ln_f.bias");
}

TEST(GptModel, InitIsGpt2sAndAPureFunctionOfSeedAndUnit) {
  const GptConfig c = config(3, 2, 64, 16);
  GptModel model(c);
  std::vector<float> a(model.param_count()), b(model.param_count());
  init_all(model, a, 42);
  // Units drawn alone, in reverse order, into a fresh buffer: the same bits.
  const auto& units = model.units();
  for (std::size_t u = units.size(); u-- > 0;) {
    model.init_unit(static_cast<int>(u),
                    std::span(b).subspan(units[u].param_offset, units[u].param_count), 42);
  }
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  init_all(model, b, 43);
  EXPECT_NE(a[0], b[0]);

  auto stats = [&](const UnitInfo& u, std::size_t t) {
    const auto [begin, end] = gpt_testing::tensor_range(u, t);
    double s = 0, s2 = 0;
    for (std::size_t i = begin; i < end; ++i) {
      s += a[i];
      s2 += double{a[i]} * a[i];
    }
    const double n = static_cast<double>(end - begin), mean = s / n;
    return std::pair{mean, std::sqrt(s2 / n - mean * mean)};
  };
  const double residual_std = 0.02 / std::sqrt(2.0 * 3);
  // Statistical, not rounding, bounds: n normal draws of std s give a mean within s / sqrt(n)
  // and a std within s / sqrt(2 n) per standard error; n = 16384 (wte, c_fc, mlp.c_proj) or
  // 4096 (attn.c_proj), and every bound is at least 6 standard errors. The draws are seeded,
  // so the same on every machine.
  auto [wte_mean, wte_std] = stats(units[0], 0);
  EXPECT_NEAR(wte_mean, 0.0, 1e-3);
  EXPECT_NEAR(wte_std, 0.02, 1e-3);
  auto [fc_mean, fc_std] = stats(units[2], 8);  // mlp.c_fc.weight
  EXPECT_NEAR(fc_std, 0.02, 1e-3);
  auto [proj_mean, proj_std] = stats(units[2], 10);  // mlp.c_proj.weight
  EXPECT_NEAR(proj_std, residual_std, 5e-4);
  auto [attn_proj_mean, attn_proj_std] = stats(units[1], 4);  // attn.c_proj.weight
  EXPECT_NEAR(attn_proj_std, residual_std, 1e-3);
  for (std::size_t t : {0u, 6u}) {  // ln_1.weight, ln_2.weight
    EXPECT_EQ(stats(units[1], t), (std::pair{1.0, 0.0}));
  }
  for (std::size_t t : {1u, 3u, 5u, 7u, 9u, 11u})
    EXPECT_EQ(stats(units[3], t), (std::pair{0.0, 0.0}));
  EXPECT_EQ(stats(units[4], 0), (std::pair{1.0, 0.0}));  // ln_f
  EXPECT_EQ(stats(units[4], 1), (std::pair{0.0, 0.0}));
}

TEST(GptModel, LossAtInitIsLn256) {
  const GptConfig c = config(2, 2, 32, 16);
  GptModel model(c);
  std::vector<float> params(model.param_count());
  init_all(model, params, 1);
  begin_windows(model, random_windows(4, 16, 3), 4);
  const float loss = forward_all(model, params);
  std::printf("  loss at init %.4f, ln 256 = %.4f\n", loss, std::log(256.0));
  // A model bound, not a rounding one: logits of variance about C 0.02^2 = 0.013 raise the
  // expected loss above ln 256 by half that, 0.006; 0.02 leaves room for the sample's spread.
  EXPECT_NEAR(loss, std::log(256.0), 0.02);
}

// The whole model's gradient against central differences of its loss, at a few coordinates
// of every tensor. The parameters are GPT-2's init plus noise, so every path carries a
// gradient above the fp32 noise of the loss; the noise also curves the loss, which the
// truncation term of finite_difference.h's bound measures.
TEST(GptModel, GradientMatchesFiniteDifferences) {
  const GptConfig c = tiny_config();
  GptModel model(c);
  std::vector<float> params(model.param_count());
  init_all(model, params, 5);
  const auto noise = random_vector(params.size(), 6, 0.3);
  for (std::size_t i = 0; i < params.size(); ++i) params[i] += noise[i];
  const std::size_t B = 2;
  begin_windows(model, random_windows(B, c.seq_len, 9), B);
  std::vector<float> grads(params.size(), 0.0f);
  forward_backward_all(model, params, grads);
  auto objective = [&] {  // the mean loss, summed in double
    forward_all(model, params);
    double sum = 0;
    for (float l : model.losses()) sum += l;
    return sum / static_cast<double>(model.losses().size());
  };

  // The loss's rounding, taken as one fp32 epsilon of it: the mean is rounded to fp32 (u |loss|
  // alone), and the roundings inside the network, each relative to its own sums, reach the loss
  // through a LayerNorm and a softmax with mixed signs. A worst case through every block would
  // lie above the gradients themselves, so this one is a model, not a proof: 3 eps loss / h =
  // 1e-4 against the 1e-5 of noise the differences show.
  const double loss = objective();
  const double objective_error = tolerance::kFp32Epsilon * loss;
  double worst = 0;
  for (const auto& u : model.units()) {
    for (std::size_t t = 0; t < u.tensors.size(); ++t) {
      const auto [begin, end] = gpt_testing::tensor_range(u, t);
      // Five coordinates spread over the tensor, and the tensor's largest gradient.
      std::vector<std::size_t> which;
      std::size_t largest = 0;
      for (std::size_t i = 0; i < end - begin; ++i) {
        if (std::fabs(grads[begin + i]) > std::fabs(grads[begin + largest])) largest = i;
      }
      which.push_back(largest);
      for (std::size_t k = 0; k < 5; ++k) which.push_back((k * 7919 + t) % (end - begin));
      const auto r = fd_check(u.tensors[t].name, std::span(params).subspan(begin, end - begin),
                              std::span<const float>(grads).subspan(begin, end - begin), objective,
                              {.h = 2e-2f, .objective_error = objective_error, .which = which});
      worst = std::max(worst, r.worst);
    }
  }
  std::printf("  whole model: worst |difference| / bound %.2e\n", worst);
  EXPECT_LT(worst, 1.0);
}

TEST(GptModel, BackwardAddsAndScalesByGradScale) {
  const GptConfig c = tiny_config();
  GptModel model(c);
  std::vector<float> params(model.param_count());
  init_all(model, params, 5);
  const auto windows = random_windows(3, c.seq_len, 10);
  std::vector<float> once(params.size(), 0.0f), twice(params.size(), 0.0f),
      scaled(params.size(), 0.0f);
  begin_windows(model, windows, 3);
  const float loss1 = forward_backward_all(model, params, once);
  begin_windows(model, windows, 3);
  forward_backward_all(model, params, twice);
  const float loss2 = forward_backward_all(model, params, twice);
  begin_windows(model, windows, 3, 2.0f);
  forward_backward_all(model, params, scaled);
  EXPECT_EQ(loss1, loss2);  // deterministic
  std::vector<float> again(params.size(), 0.0f);
  begin_windows(model, windows, 3);
  forward_backward_all(model, params, again);
  EXPECT_EQ(std::memcmp(once.data(), again.data(), once.size() * sizeof(float)), 0);
  const auto terms = testing::gpt_terms(c, model.units(), params, windows, 3, 1.0f);
  ASSERT_EQ(std::memcmp(terms.grads.data(), once.data(), once.size() * sizeof(float)), 0);
  const double n = static_cast<double>(terms.most_terms);
  for (std::size_t i = 0; i < params.size(); ++i) {
    // grad_scale 2 doubles every term of every sum: exactly twice the bits.
    ASSERT_EQ(scaled[i], 2.0f * once[i]) << i;
    // Added into what was there: once + (n terms) and 0 + (n terms) round differently. Each
    // errs by gamma(operands) * sum |operands|, with sum |terms| = S: |twice - 2 once| <=
    // gamma(n + 1) (|once| + S) + gamma(n) S.
    const double S = terms.abs_sum[i];
    ASSERT_NEAR(twice[i], 2.0f * once[i],
                tolerance::gamma(n + 1) * (std::fabs(once[i]) + S) + tolerance::gamma(n) * S)
        << i;
  }
}

// Threads split the micro-batch's samples: per-position losses are each one sample's, each
// lane's gradient is its samples' own, and the lanes' are added in order. Fewer samples than
// threads leaves lanes idle; the same thread count gives the same bits every time, checkpointing
// included.
TEST(GptModel, ThreadsSplitTheSamplesAndSumTheirGradients) {
  const GptConfig c = config(2, 2, 16, 8);
  GptModel one(c);
  std::vector<float> params(one.param_count());
  init_all(one, params, 3);
  const auto noise = random_vector(params.size(), 4, 0.1);
  for (std::size_t i = 0; i < params.size(); ++i) params[i] += noise[i];
  for (std::size_t B : {1, 2, 5}) {
    const auto windows = random_windows(B, c.seq_len, 20 + B);
    for (bool checkpoint : {false, true}) {
      for (int threads : {2, 3, 7}) {
        GptConfig cc = c;
        cc.checkpoint_activations = checkpoint;
        GptModel split(cc);
        split.set_threads(threads);
        EXPECT_EQ(split.threads(), threads);
        std::vector<float> grads(params.size(), 0.0f), again(params.size(), 0.0f);
        begin_windows(split, windows, B, 0.5f);
        const float loss = forward_backward_all(split, params, grads);
        begin_windows(split, windows, B, 0.5f);
        forward_backward_all(split, params, again);
        EXPECT_EQ(std::memcmp(grads.data(), again.data(), grads.size() * sizeof(float)), 0);
        // Not compared with one thread's gradient under a tolerance: with fewer rows per GEMM
        // the BLAS may pick other kernels (OpenBLAS's Haswell ones do), and those roundings
        // travel through the network. What the lanes promise holds on any machine: lane p
        // computes what one thread computes for its samples alone (with the whole batch's
        // dloss = 0.5 / (B T)), and after each unit the lanes' gradients are added in lane
        // order. Every tensor but wte has one unit's terms: the parts added in order, to the
        // bit. The tied wte gets the LM head's and then the embeddings' terms, which the lanes
        // group by unit and the parts by lane: the same terms, each sum within gamma(terms)
        // sum |terms| of the exact one (gpt_terms of each part).
        std::vector<float> parts(params.size(), 0.0f);
        std::vector<double> abs_sum(params.size(), 0.0);
        std::size_t terms = 2 * std::size_t(threads);
        std::vector<float> position_losses;
        for (int p = 0; p < threads; ++p) {
          const std::size_t first = B * p / threads, n = B * (p + 1) / threads - first;
          if (n == 0) continue;
          const float dloss = 0.5f / static_cast<float>(B * c.seq_len);
          const float nT = static_cast<float>(n * c.seq_len);
          float scale = dloss * nT;  // the grad_scale whose dloss is that one, to the bit
          while (scale / nT < dloss) scale = std::nextafter(scale, INFINITY);
          while (scale / nT > dloss) scale = std::nextafter(scale, 0.0f);
          ASSERT_EQ(scale / nT, dloss);
          GptModel alone(cc);
          std::vector<float> part(params.size(), 0.0f);
          begin_windows(alone,
                        std::span(windows).subspan(first * (c.seq_len + 1), n * (c.seq_len + 1)), n,
                        scale);
          forward_backward_all(alone, params, part);
          for (std::size_t i = 0; i < parts.size(); ++i) parts[i] += part[i];
          const auto t = testing::gpt_terms(
              c, alone.units(), params,
              std::span(windows).subspan(first * (c.seq_len + 1), n * (c.seq_len + 1)), n, scale);
          for (std::size_t i = 0; i < parts.size(); ++i) abs_sum[i] += t.abs_sum[i];
          terms += t.most_terms;
          position_losses.insert(position_losses.end(), alone.losses().begin(),
                                 alone.losses().end());
        }
        const std::size_t wte_end = 256 * std::size_t(c.hidden);  // wte leads the layout
        for (std::size_t i = 0; i < grads.size(); ++i) {
          if (i < wte_end) {
            ASSERT_NEAR(grads[i], parts[i], 2 * tolerance::gamma(double(terms)) * abs_sum[i])
                << "B " << B << ", " << threads << " threads, element " << i;
          } else {
            ASSERT_EQ(grads[i], parts[i])
                << "B " << B << ", " << threads << " threads, element " << i;
          }
        }
        double sum = 0;  // the mean loss as the model takes it
        for (float l : position_losses) sum += l;
        EXPECT_EQ(loss, static_cast<float>(sum / static_cast<double>(B * c.seq_len)));
        // Each further thread: gradients for the largest view, the final unit with the
        // embeddings it reads (2 C + (256 + T) C = 4256 floats), and T^2 of scratch.
        EXPECT_EQ(split.activation_bytes(),
                  cc.activation_bytes(B) + 4 * (threads - 1) * (4256 + 64));
      }
    }
  }
}

TEST(GptModel, LaterTokensDoNotChangeEarlierLogits) {
  const GptConfig c = tiny_config();
  GptModel model(c);
  std::vector<float> params(model.param_count());
  init_all(model, params, 5);
  auto windows = random_windows(1, c.seq_len, 11);
  begin_windows(model, windows, 1);
  forward_all(model, params);
  const std::vector<float> before(model.logits().begin(), model.logits().end());
  windows[c.seq_len - 1] ^= 0x55;  // the last input token
  begin_windows(model, windows, 1);
  forward_all(model, params);
  const std::size_t V = 256;
  for (std::size_t i = 0; i < (c.seq_len - 1) * V; ++i) ASSERT_EQ(model.logits()[i], before[i]);
  bool last_changed = false;
  for (std::size_t i = (c.seq_len - 1) * V; i < c.seq_len * V; ++i) {
    last_changed |= model.logits()[i] != before[i];
  }
  EXPECT_TRUE(last_changed);
}

TEST(GptModel, CheckpointingGivesBitwiseIdenticalGradientsWithLessMemory) {
  for (const Compute compute : {Compute::fp32, Compute::bf16}) {
    SCOPED_TRACE(std::string(compute_name(compute)) + " compute");
    GptConfig plain;
    plain.layers = 3;
    plain.heads = 2;
    plain.hidden = 16;
    plain.seq_len = 8;
    plain.compute = compute;
    GptConfig checkpointed = plain;
    checkpointed.checkpoint_activations = true;
    GptModel a(plain), b(checkpointed);
    std::vector<float> params(a.param_count());
    init_all(a, params, 7);
    const auto noise = random_vector(params.size(), 8, 0.1);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] += noise[i];
    const auto windows = random_windows(3, 8, 12);
    std::vector<float> ga(params.size(), 0.0f), gb(params.size(), 0.0f);
    begin_windows(a, windows, 3);
    begin_windows(b, windows, 3);
    const float la = forward_backward_all(a, params, ga);
    const float lb = forward_backward_all(b, params, gb);
    EXPECT_EQ(la, lb);
    EXPECT_EQ(std::memcmp(ga.data(), gb.data(), ga.size() * sizeof(float)), 0);
    std::printf("  activation bytes: %zu without checkpointing, %zu with\n", a.activation_bytes(),
                b.activation_bytes());
    EXPECT_LT(b.activation_bytes(), a.activation_bytes());
    EXPECT_EQ(a.activation_bytes(), plain.activation_bytes(3) + 4 * plain.gemm_scratch_floats(24));
    EXPECT_EQ(b.activation_bytes(),
              checkpointed.activation_bytes(3) + 4 * checkpointed.gemm_scratch_floats(24));
  }
}

TEST(GptModel, ActivationBytesFollowTheFormulaAndTheLargestMicroBatch) {
  GptConfig c = tiny_config();
  // By hand, B = 3: BT = 12; per token (L+1) C = 24, L (15 C + 4 + NH T) = 2 * 132 = 264,
  // C + 2V + 3 = 523, 10 C + V = 336; floats = 12 * 1147 + T^2 16 = 13780; bytes 4 * 13780
  // + 2 * 12 = 55144.
  EXPECT_EQ(c.activation_bytes(3), 55144u);
  c.checkpoint_activations = true;  // one set of internals: 264 -> 132 per token
  EXPECT_EQ(c.activation_bytes(3), 55144u - 4 * 12 * 132);
  c.checkpoint_activations = false;
  GptModel model(c);
  EXPECT_EQ(model.activation_bytes(), 0u);
  begin_windows(model, random_windows(3, 4, 1), 3);
  EXPECT_EQ(model.activation_bytes(), 55144u);
  begin_windows(model, random_windows(2, 4, 1), 2);  // smaller: the buffers stay
  EXPECT_EQ(model.activation_bytes(), 55144u);
  begin_windows(model, random_windows(5, 4, 1), 5);
  EXPECT_EQ(model.activation_bytes(), c.activation_bytes(5));
}

TEST(GptModel, RankRGetsItsSliceOfTheGlobalBatch) {
  const GptConfig c = tiny_config();
  const data::TextWindows samples(
      std::make_shared<data::TextData>(
          text_bytes("It was the best of times, it was the worst of times. ", 10), c.seq_len),
      99);
  const std::size_t N = 4, B = 2;
  const std::uint64_t g = 3;  // global micro-batch
  GptModel whole(c);
  whole.set_threads(N);  // lane r computes rank r's samples, as rank r does
  data::Batch batch;
  samples.draw(data::Split::train, g * N * B, N * B, batch);
  begin_windows(whole, batch.tokens, N * B);
  const std::vector<std::uint8_t> all(whole.tokens().begin(), whole.tokens().end());
  std::vector<float> params(whole.param_count());
  init_all(whole, params, 3);
  std::vector<float> whole_grads(params.size(), 0.0f);
  const float whole_loss = forward_backward_all(whole, params, whole_grads);

  double rank_loss_sum = 0;
  std::vector<float> rank_grads(params.size(), 0.0f);
  for (std::size_t r = 0; r < N; ++r) {
    GptModel rank(c);
    samples.draw(data::Split::train, (g * N + r) * B, B, batch);
    begin_windows(rank, batch.tokens, B, 1.0f / N);
    ASSERT_EQ(rank.tokens().size(), B * c.seq_len);
    for (std::size_t i = 0; i < B * c.seq_len; ++i) {
      ASSERT_EQ(rank.tokens()[i], all[r * B * c.seq_len + i]) << "rank " << r;
    }
    rank_loss_sum += forward_backward_all(rank, params, rank_grads);
  }
  // The same per-position losses (all >= 0), their means rounded to fp32 once per rank and
  // once whole: within 2 u of the exact mean each way.
  EXPECT_NEAR(rank_loss_sum / N, whole_loss, tolerance::gamma(2) * whole_loss);
  // The same gradient terms (rank r's are lane r's) in two groupings: the lanes' sums added
  // in lane order, and the ranks' added into one buffer as they come. Each is within
  // gamma(terms + N) sum |terms| of the exact sum; sum |terms| is the ranks' together.
  std::vector<double> abs_sum(params.size(), 0.0);
  std::size_t terms = 0;
  for (std::size_t r = 0; r < N; ++r) {
    samples.draw(data::Split::train, (g * N + r) * B, B, batch);
    const auto t = testing::gpt_terms(c, whole.units(), params, batch.tokens, B, 1.0f / N);
    for (std::size_t i = 0; i < params.size(); ++i) abs_sum[i] += t.abs_sum[i];
    terms += t.most_terms;
  }
  const double gamma = tolerance::gamma(double(terms + N));
  double worst = 0;  // |difference| / bound
  for (std::size_t i = 0; i < params.size(); ++i) {
    worst = std::max(worst,
                     std::fabs(double{rank_grads[i]} - whole_grads[i]) / (2 * gamma * abs_sum[i]));
  }
  std::printf("  worst |rank sum - whole| / bound %.2e\n", worst);
  EXPECT_LT(worst, 1.0);
}

TEST(GptModel, AMicroBatchWithoutItsTokensIsAnError) {
  GptModel model(tiny_config());
  EXPECT_THROW(model.begin_micro_batch({.samples = 1}), Error);
  const std::vector<std::uint8_t> short_window(tiny_config().seq_len);  // one byte short
  EXPECT_THROW(begin_windows(model, short_window, 1), Error);
}

// Plain SGD steps on a tiny repetitive corpus: the loss must fall well below ln 256 (by 1.5
// nats: about to the corpus's byte frequencies, a unigram model, and then some).
TEST(GptModel, SgdStepsReduceTheLoss) {
  const GptConfig c = config(2, 2, 32, 16);
  const data::TextWindows samples(
      std::make_shared<data::TextData>(
          text_bytes("the quick brown fox jumps over the lazy dog. ", 30), c.seq_len),
      1);
  GptModel model(c);
  data::Batch batch;
  std::vector<float> params(model.param_count()), grads(params.size());
  init_all(model, params, 1);
  const std::size_t B = 8;
  const float lr = 0.3f;
  float first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    samples.draw(data::Split::train, step * B, B, batch);
    begin_windows(model, batch.tokens, B);
    const float loss = forward_backward_all(model, params, grads);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] -= lr * grads[i];
    if (step == 0) first = loss;
    last = loss;
  }
  std::printf("  SGD: loss %.3f -> %.3f in 40 steps\n", first, last);
  EXPECT_NEAR(first, std::log(256.0), 0.05);
  EXPECT_LT(last, first - 1.5f);
}

}  // namespace
}  // namespace zerodp::model
