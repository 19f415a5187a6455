// The measure table (run::measurement_table): each figure beside its prediction, as the
// StageMeasure holds them, the differences signed, and the inputs the text names in the
// front end's words.
#include <gtest/gtest.h>

#include "zerodp/run/measurement_table.h"

namespace zerodp::run {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MeasurementTable, ShowsMeasuredBesidePredictedWithTheWorstRankSDifference) {
  const MeasureSetup setup{"mlp, 4 layers",
                           4224,
                           2,
                           "threads",
                           false,
                           3,
                           2,
                           "bf16",
                           "",
                           "",
                           1,
                           "fp32 master and AdamW's m (first moment) and v (second moment)",
                           plan::BytesPerParam{2, 2, 12}};
  StageMeasure st{Stage::zero2, {}};
  for (int r = 0; r < 2; ++r) {
    RankMeasure m;
    m.model_state = 38'000 + 10 * r;  // rank 1 holds 10 bytes more than predicted
    m.predicted_state = 38'000;
    m.peak_total = m.predicted_peak = 67'200;
    m.sent_per_step = 8'450;
    m.predicted_comm = 8'450 - 2 * r;  // rank 1 sent 2 bytes more
    m.step_seconds = 0.010;
    m.exposed_seconds = 0.002;
    m.step_seconds_sync = m.exposed_seconds_sync = 0.004;
    st.ranks.push_back(m);
  }
  const std::string table = measurement_table(setup, {st}, true, [](std::string_view f) {
    std::string named = "<";  // in steps: GCC 12 warns falsely on "<" + std::string
    named += f;
    named += '>';
    return named;
  });
  EXPECT_TRUE(has(table, "zerodp measure: mlp, 4 layers\n")) << table;
  EXPECT_TRUE(has(table, "Φ = 4.22K parameters, N = 2 ranks (threads); bf16")) << table;
  EXPECT_TRUE(has(table, "  Model state per rank ")) << table;
  EXPECT_TRUE(has(table, " ZeRO-2\n")) << table;
  EXPECT_TRUE(has(table, "2Φ + 14Φ/N")) << table;
  // The worst rank's difference, signed, for the model state and the bytes sent.
  EXPECT_TRUE(has(table, "measured - predicted, worst rank")) << table;
  EXPECT_TRUE(has(table, "+10 B")) << table;
  EXPECT_TRUE(has(table, "+2 B")) << table;
  // Efficiency is the compute's share of the step: (10 - 2) / 10.
  EXPECT_TRUE(has(table, "80.0 %")) << table;
  // Every rank's row, and the bucket size named as the caller names its input.
  EXPECT_TRUE(has(table, "ZeRO-2, every rank")) << table;
  EXPECT_TRUE(has(table, "buckets of <bucket_bytes>")) << table;
}

// The header and the formula row read the optimizer's bytes per parameter: Lion keeps one slot,
// 2 + 2 + 8, so ZeRO-1 holds 4Φ + 8Φ/N and ZeRO-3 12Φ/N.
TEST(MeasurementTable, TheFormulaIsTheOptimizersBytesPerParameter) {
  const MeasureSetup setup{"mlp, 4 layers",
                           4224,
                           2,
                           "threads",
                           false,
                           3,
                           2,
                           "bf16",
                           "",
                           "",
                           1,
                           "fp32 master and Lion's m (momentum)",
                           plan::BytesPerParam{2, 2, 8}};
  std::vector<StageMeasure> stages;
  for (Stage stage : {Stage::dp, Stage::zero1, Stage::zero2, Stage::zero3}) {
    StageMeasure st{stage, {}};
    st.ranks.resize(2);
    stages.push_back(st);
  }
  const std::string table =
      measurement_table(setup, stages, true, [](std::string_view f) { return std::string(f); });
  EXPECT_TRUE(has(table, "fp32 master and Lion's m (momentum): 2 + 2 + 8 bytes/param\n")) << table;
  for (const char* formula : {" 12Φ ", " 4Φ + 8Φ/N ", " 2Φ + 10Φ/N ", " 12Φ/N\n"}) {
    EXPECT_TRUE(has(table, formula)) << formula << "\n" << table;
  }
  EXPECT_FALSE(has(table, "16Φ")) << table;
}

}  // namespace
}  // namespace zerodp::run
