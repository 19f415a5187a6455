// Each stage's memory at N, term by term (report/breakdown.h): the terms add up to the stage's
// total exactly, the model state splits into the seed's three blocks, and the chart draws every
// stage, its total and the GPU's memory.
#include "zerodp/report/breakdown.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "zerodp/common/units.h"

namespace zerodp::report {
namespace {

std::uint64_t sum(const PeakBreakdown& b) {
  return std::accumulate(b.terms.begin(), b.terms.end(), std::uint64_t{0},
                         [](std::uint64_t a, const PeakTerm& t) { return a + t.bytes; });
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// 7B parameters on 8 GPUs of 80 GB with 10 GB of activations: P, G, K = 2, 2, 12 bytes.
PlanInputs seven_b() {
  PlanInputs in;
  in.params = 7'000'000'000;
  in.gpus = 8;
  in.gpu_memory = 80'000'000'000;
  in.activation_bytes = 10'000'000'000;
  in.activations_given = true;
  return in;
}

TEST(PeakBreakdown, TheModelStateSplitsIntoTheSeedsThreeBlocksPerStage) {
  const PlanReport r = make_plan(seven_b());
  // (P, G, K) bytes per GPU: DP keeps all, ZeRO-1 shards K, ZeRO-2 G and K, ZeRO-3 all three.
  const std::uint64_t p = 14'000'000'000, g = 14'000'000'000, k = 84'000'000'000;
  const std::uint64_t expected[4][3] = {
      {p, g, k}, {p, g, k / 8}, {p, g / 8, k / 8}, {p / 8, g / 8, k / 8}};
  for (int stage = 0; stage < 4; ++stage) {
    const PeakBreakdown b = peak_terms_of(r, r.stages[stage]);
    ASSERT_EQ(b.terms.size(), 4u) << stage;
    EXPECT_EQ(b.terms[0].name, "16-bit params");
    EXPECT_EQ(b.terms[0].bytes, expected[stage][0]) << stage;
    EXPECT_EQ(b.terms[1].name, "gradients");
    EXPECT_EQ(b.terms[1].bytes, expected[stage][1]) << stage;
    EXPECT_EQ(b.terms[2].name, "optimizer states");
    EXPECT_EQ(b.terms[2].bytes, expected[stage][2]) << stage;
    EXPECT_EQ(b.terms[3].name, "activations");
    EXPECT_EQ(b.terms[3].bytes, 10'000'000'000u);
    EXPECT_EQ(sum(b), *r.stages[stage].total_bytes) << stage;
    EXPECT_EQ(b.phase, "");
  }
}

TEST(PeakBreakdown, WithTheGpuPeaksTermsTheyAddUpToEachStagesPeak) {
  PlanInputs in = seven_b();
  in.buffers = true;
  in.largest_layer = 131'072'000;
  in.cuda_overhead = 2'000'000'000;
  for (std::uint64_t activations : {std::uint64_t{0}, std::uint64_t{10'000'000'000}}) {
    in.activation_bytes = activations;
    const PlanReport r = make_plan(in);
    ASSERT_TRUE(r.runtime_counted);
    for (const StageReport& s : r.stages) {
      const PeakBreakdown b = peak_terms_of(r, s);
      EXPECT_EQ(sum(b), *s.total_bytes) << stage_name(s.stage) << " at " << activations;
      EXPECT_TRUE(b.phase == "backward" || b.phase == "optimizer step") << b.phase;
      for (const PeakTerm& t : b.terms) EXPECT_GT(t.bytes, 0u) << t.name;
    }
  }
}

TEST(PeakBreakdown, OffloadedModelStateIsOneTermOfWhatStaysOnTheGpu) {
  PlanInputs in = seven_b();
  in.offload.optimizer = deepspeed::OffloadDevice::cpu;
  const PlanReport r = make_plan(in);
  const StageReport& zero2 = r.stages[2];
  ASSERT_TRUE(zero2.offloaded);
  const PeakBreakdown b = peak_terms_of(r, zero2);
  ASSERT_EQ(b.terms.size(), 2u);
  EXPECT_EQ(b.terms[0].name, "model state on the GPU");
  EXPECT_EQ(b.terms[0].bytes, *zero2.model_state_bytes);
  EXPECT_EQ(sum(b), *zero2.total_bytes);
}

TEST(PeakBreakdown, TheChartDrawsEveryStageItsTotalAndTheGpuMemory) {
  const PlanReport r = make_plan(seven_b());
  const std::string svg = peak_breakdown_svg(r);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  for (const char* stage : {">DP<", ">ZeRO-1<", ">ZeRO-2<", ">ZeRO-3<"}) {
    EXPECT_EQ(count(svg, stage), 1u) << stage;
  }
  for (const StageReport& s : r.stages) {
    // In steps: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
    std::string cell = ">";
    cell += units::format_bytes(*s.total_bytes);
    cell += '<';
    EXPECT_NE(svg.find(cell), std::string::npos) << cell;
  }
  EXPECT_NE(svg.find(">GPU memory 80.0 GB<"), std::string::npos);
  // 4 stages x 4 terms, 4 legend swatches and the document's background.
  EXPECT_EQ(count(svg, "<rect"), 4u * 4u + 4u + 1u);
  for (const char* term : {"16-bit params", "gradients", "optimizer states", "activations"}) {
    EXPECT_NE(svg.find(std::string(">") + term + "<"), std::string::npos) << term;
  }
}

}  // namespace
}  // namespace zerodp::report
