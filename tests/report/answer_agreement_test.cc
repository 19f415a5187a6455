// One question, one answer: over thousands of random questions, no two parts of a plan disagree
// about what fits. Each part that names a count or a stage (a stage's least N, the cheapest
// stage, the tight stage, what would fit at N, the fewest GPUs without N, the largest model) is
// checked against the verdict of the plan made again at that count, which is the one rule.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <sstream>
#include <string>

#include "zerodp/report/answer.h"
#include "zerodp/report/report.h"

namespace zerodp::report {
namespace {

constexpr std::uint64_t kGB = 1'000'000'000;

// A question as users ask it with a predicted peak (the CUDA allowance makes the band apply) or
// with the seed's exact figures, offload and host memory, a stage asked for and activation
// choices; every field drawn from a small range so that fits, tight and no all occur.
PlanInputs random_question(std::mt19937_64& rng, bool with_gpus) {
  auto pick = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  PlanInputs in;
  in.params = pick(1, 40) * 500'000'000;
  if (with_gpus) in.gpus = int(pick(1, 64));
  in.gpu_memory = pick(16, 192) * kGB;
  in.activation_bytes = pick(0, 40) * kGB;
  in.activations_given = true;
  if (pick(0, 1)) in.cuda_overhead = pick(1, 3) * kGB;
  if (pick(0, 3) == 0) {
    in.offload.optimizer = deepspeed::OffloadDevice::cpu;
    if (pick(0, 1)) in.offload.params = deepspeed::OffloadDevice::cpu;
    in.host_memory = pick(64, 2048) * kGB;
    if (pick(0, 1)) in.gpus_per_node = int(pick(1, 8));
  }
  if (pick(0, 2) == 0) in.configured_stage = kStages[pick(0, 3)];
  // The bytes counted from an optimizer of the table (its remedies searched), the 8-bit ones'
  // blocks and size rule among them; or given alone.
  if (pick(0, 3) != 0) {
    constexpr plan::Optimizer kOptimizers[] = {plan::Optimizer::adam, plan::Optimizer::adam_8bit,
                                               plan::Optimizer::lion_8bit,
                                               plan::Optimizer::adafactor, plan::Optimizer::sgd};
    in.optimizer = kOptimizers[pick(0, 4)];
    in.precision = pick(0, 3) == 0 ? plan::Precision::fp32 : plan::Precision::bf16;
    in.bpp = plan::bytes_per_param(in.precision, *in.optimizer);
  }
  for (std::uint64_t i = pick(0, 3); i > 0; --i) {
    in.activation_choices.push_back({"choice " + std::to_string(i), pick(0, 20) * kGB});
  }
  return in;
}

std::string describe(const PlanInputs& in) {
  std::ostringstream out;
  out << "params " << *in.params << " gpus " << (in.gpus ? std::to_string(*in.gpus) : "-")
      << " memory " << *in.gpu_memory << " activations " << in.activation_bytes << " cuda "
      << in.cuda_overhead << " offload " << in.offload.any() << " host "
      << (in.host_memory ? std::to_string(*in.host_memory) : "-") << " per node "
      << (in.gpus_per_node ? std::to_string(*in.gpus_per_node) : "-") << " stage "
      << (in.configured_stage ? stage_number(*in.configured_stage) : -1) << " choices "
      << in.activation_choices.size();
  return out.str();
}

// The verdict of `stage` for `in` planned again at n GPUs with `activations`.
Verdict verdict_at(PlanInputs in, int stage, std::uint64_t n, std::uint64_t activations) {
  in.gpus = int(n);
  in.activation_bytes = activations;
  in.activation_choices.clear();
  in.seek_fewest_gpus = false;
  return *make_plan(in).stages[std::size_t(stage)].verdict;
}

TEST(AnswerAgreement, NoTwoPartsOfAPlanDisagreeOnWhatFits) {
  std::mt19937_64 rng(20261206);
  int fitted = 0, tight = 0, changes = 0, offloads = 0, optimizers = 0;
  for (int q = 0; q < 1500; ++q) {
    const PlanInputs in = random_question(rng, true);
    const PlanReport r = make_plan(in);
    SCOPED_TRACE(describe(in));
    const std::uint64_t n = std::uint64_t(*in.gpus);
    for (const StageReport& s : r.stages) {
      const int stage = stage_number(s.stage);
      // Least N and the verdict at N: a stage that fits at N has a least N no larger, one that
      // does not has none or a larger one; and the least N itself fits, one fewer does not.
      if (s.verdict == Verdict::fits) {
        ++fitted;
        ASSERT_TRUE(s.min_gpus) << stage;
        EXPECT_LE(*s.min_gpus, n) << stage;
      } else if (s.min_gpus) {
        EXPECT_GT(*s.min_gpus, n) << stage;
      }
      tight += s.verdict == Verdict::tight;
      if (s.min_gpus && *s.min_gpus <= 4096) {
        EXPECT_EQ(verdict_at(in, stage, *s.min_gpus, in.activation_bytes), Verdict::fits) << stage;
        if (*s.min_gpus > 1) {
          EXPECT_NE(verdict_at(in, stage, *s.min_gpus - 1, in.activation_bytes), Verdict::fits)
              << stage;
        }
      }
    }
    // The cheapest stage is the first that fits; a tight stage named beside it comes before it.
    std::optional<int> first_fit, first_tight;
    for (const StageReport& s : r.stages) {
      if (!first_fit && s.verdict == Verdict::fits) first_fit = stage_number(s.stage);
      if (!first_fit && !first_tight && s.verdict == Verdict::tight) {
        first_tight = stage_number(s.stage);
      }
    }
    EXPECT_EQ(r.cheapest_fitting_stage, first_fit);
    EXPECT_EQ(r.tight_stage, first_tight);
    // Every change offered fits, planned again where it says (at N, or on its N).
    for (const PlanReport::FittingChange& c : r.fitting_changes) {
      ++changes;
      EXPECT_EQ(verdict_at(in, c.stage, c.gpus.value_or(n), c.activation_bytes), Verdict::fits)
          << c.change;
      if (c.gpus) {
        EXPECT_GT(*c.gpus, n) << c.change;
      }
    }
    // Every optimizer offered fits, planned again with it where it says.
    for (const PlanReport::FittingChange& c : r.optimizer_changes) {
      ++optimizers;
      const auto named = optimizer_from_name(c.change.substr(c.change.find(' ') + 1));
      ASSERT_TRUE(named) << c.change;
      PlanInputs with = in;
      with.optimizer = named->id;
      with.bpp = plan::bytes_per_param(in.precision, named->id);
      EXPECT_LT(with.bpp.total(), in.bpp.total()) << c.change;
      EXPECT_EQ(verdict_at(with, c.stage, c.gpus.value_or(n), in.activation_bytes), Verdict::fits)
          << c.change;
    }
    // Every other offload offered fits, planned again with it at N (the host checked); NVMe
    // and the params' offload only at ZeRO-3.
    for (const PlanReport::OffloadChange& c : r.offload_changes) {
      ++offloads;
      PlanInputs with = in;
      with.offload = c.offload;
      std::uint64_t activations = in.activation_bytes;
      for (const auto& choice : in.activation_choices) {
        if (choice.change == c.activation_change) activations = choice.bytes;
      }
      EXPECT_EQ(verdict_at(with, c.stage, n, activations), Verdict::fits);
      if (c.offload.optimizer == deepspeed::OffloadDevice::nvme ||
          c.offload.params != deepspeed::OffloadDevice::none) {
        EXPECT_EQ(c.stage, 3);
      }
    }
    // Where the host cannot hold the offload, the fewest GPUs with nothing offloaded fit.
    if (r.without_offload && r.without_offload->fewest_gpus &&
        *r.without_offload->fewest_gpus->gpus <= 4096) {
      const PlanReport::FittingChange& f = *r.without_offload->fewest_gpus;
      PlanInputs bare = in;
      bare.offload = {};
      bare.configured_stage.reset();
      EXPECT_EQ(verdict_at(bare, f.stage, *f.gpus, f.activation_bytes), Verdict::fits);
      ++offloads;
    }
    // The answer printed first says the same: at most 12 lines of at most 80 columns, its
    // verdict the stage asked about's, else `fits` for the cheapest, else does_not_fit.
    const Answer answer = answer_of(r);
    EXPECT_LE(answer.lines.size(), kAnswerLines);
    for (const std::string& line : answer.lines) EXPECT_LE(line.size(), kAnswerColumns) << line;
    const std::optional<Verdict> said =
        in.configured_stage ? r.stages[std::size_t(stage_number(*in.configured_stage))].verdict
        : first_fit         ? std::optional(Verdict::fits)
                            : std::optional(Verdict::does_not_fit);
    EXPECT_EQ(answer.verdict, said) << answer.headline;
    // Changes are sought only when the stage wanted does not fit.
    const bool wanted_fits =
        in.configured_stage
            ? r.stages[std::size_t(stage_number(*in.configured_stage))].verdict == Verdict::fits
            : first_fit.has_value();
    if (wanted_fits) {
      EXPECT_TRUE(r.fitting_changes.empty());
    }
  }
  // The questions reach every verdict and the changes: the properties were not checked on
  // empty sets.
  EXPECT_GT(fitted, 500);
  EXPECT_GT(tight, 50);
  EXPECT_GT(changes, 50);
  EXPECT_GT(offloads, 50);
  EXPECT_GT(optimizers, 40);
}

TEST(AnswerAgreement, TheFewestGpusWithoutNAreTheVerdictsLeastN) {
  std::mt19937_64 rng(61202026);
  int answered = 0;
  for (int q = 0; q < 600; ++q) {
    const PlanInputs in = random_question(rng, false);
    const PlanReport r = make_plan(in);
    SCOPED_TRACE(describe(in));
    if (!r.fewest_gpus) {
      // No stage (or not the stage asked for) fits at any N.
      for (const StageReport& s : r.stages) {
        if (!in.configured_stage || s.stage == *in.configured_stage) {
          EXPECT_FALSE(s.min_gpus);
        }
      }
      continue;
    }
    ++answered;
    const PlanReport::FittingChange& f = *r.fewest_gpus;
    const Answer answer = answer_of(r);
    EXPECT_EQ(answer.verdict, Verdict::fits);
    EXPECT_NE(answer.headline.find("on N = " + std::to_string(*f.gpus) + "."), std::string::npos)
        << answer.headline;
    EXPECT_EQ(f.gpus, r.stages[std::size_t(f.stage)].min_gpus);
    for (const StageReport& s : r.stages) {
      if (!in.configured_stage && s.min_gpus) {
        EXPECT_GE(*s.min_gpus, *f.gpus);
      }
    }
    for (const PlanReport::FittingChange& c : r.fewer_gpus_with) {
      EXPECT_LT(*c.gpus, *f.gpus);
      if (*c.gpus <= 4096) {
        EXPECT_EQ(verdict_at(in, c.stage, *c.gpus, c.activation_bytes), Verdict::fits);
      }
    }
  }
  EXPECT_GT(answered, 200);
}

TEST(AnswerAgreement, TheLargestModelFitsTheGpuAndItsHost) {
  // The inverse question (no Φ): the largest model each stage holds at N, with the host's
  // memory held to what the offload needs. That model planned again fits; one more parameter,
  // or the host's memory one byte short of it, does not.
  std::mt19937_64 rng(7);
  int host_bound = 0;
  for (int q = 0; q < 400; ++q) {
    PlanInputs in = random_question(rng, true);
    in.params.reset();
    in.cuda_overhead = 0;  // the seed's exact arithmetic: the inverse has no predicted peak
    in.activation_choices.clear();
    in.configured_stage.reset();
    const PlanReport r = make_plan(in);
    SCOPED_TRACE(describe(PlanInputs(in)));
    for (const StageReport& s : r.stages) {
      // 0: not one parameter fits; saturated: the GPU holds none of it and no host bounds it.
      if (!s.max_params || *s.max_params == 0 ||
          *s.max_params == std::numeric_limits<std::uint64_t>::max()) {
        continue;
      }
      PlanInputs at = in;
      at.params = *s.max_params;
      EXPECT_EQ(make_plan(at).stages[std::size_t(stage_number(s.stage))].verdict, Verdict::fits);
      at.params = *s.max_params + 1;
      const StageReport more = make_plan(at).stages[std::size_t(stage_number(s.stage))];
      EXPECT_EQ(more.verdict, Verdict::does_not_fit);
      host_bound += more.host_fits == false;
    }
  }
  EXPECT_GT(host_bound, 10);  // the host, not the GPU, set some of them
}

TEST(AnswerAgreement, AllOffloadedTheLargestModelIsTheHostsToSay) {
  // ZeRO-3 with optimizer and params offloaded keeps no model state on the GPU: the GPU bounds
  // nothing (saturated), and the host, when given, sets the largest model.
  PlanInputs in;
  in.gpus = 4;
  in.gpu_memory = 24 * kGB;
  in.offload = {deepspeed::OffloadDevice::cpu, deepspeed::OffloadDevice::cpu};
  EXPECT_EQ(make_plan(in).stages[3].max_params, std::numeric_limits<std::uint64_t>::max());
  in.host_memory = 512 * kGB;
  const std::uint64_t largest = *make_plan(in).stages[3].max_params;
  EXPECT_GT(largest, 0u);
  EXPECT_LT(largest, 512 * kGB);
  in.params = largest;
  EXPECT_EQ(make_plan(in).stages[3].host_fits, true);
  in.params = largest + 1;
  EXPECT_EQ(make_plan(in).stages[3].host_fits, false);
}

}  // namespace
}  // namespace zerodp::report
