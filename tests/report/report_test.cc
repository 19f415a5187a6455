#include "zerodp/report/report.h"
#include "zerodp/report/json.h"
#include "zerodp/report/notes.h"
#include "zerodp/report/table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "zerodp/common/error.h"

namespace zerodp::report {
namespace {

// The message of the UsageError make_plan() throws, or "" when it does not throw.
std::string error_of(const PlanInputs& in) {
  try {
    make_plan(in);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

TEST(MakePlan, AsksForWhatAQuestionNeedsNamingTheFlag) {
  EXPECT_TRUE(starts_with(error_of({}), "params: required")) << error_of({});
  PlanInputs in;
  in.params = 1'000'000'000;
  in.gpus = 8;
  in.compute_seconds = 10;
  EXPECT_TRUE(starts_with(error_of(in), "bandwidth: required"));
  in.compute_seconds.reset();
  in.bandwidth = 300e9;
  EXPECT_TRUE(starts_with(error_of(in), "compute_time: required"));
  in.bandwidth.reset();
  in.overlap = 0.5;
  EXPECT_TRUE(starts_with(error_of(in), "overlap: needs"));
  in.overlap.reset();
  in.round_to = 8;
  EXPECT_TRUE(starts_with(error_of(in), "round_to: needs gpu_memory"));
  in.round_to.reset();
  in.gpus.reset();
  in.compute_seconds = 10;
  in.bandwidth = 300e9;
  EXPECT_TRUE(starts_with(error_of(in), "gpus: required")) << error_of(in);
  in.comm_bytes = 2'060'000'000'000;  // a given volume needs no N
  EXPECT_EQ(error_of(in), "");
}

TEST(MakePlan, ActivationsThatLeaveNoRoomAreAVerdictNotAnError) {
  PlanInputs in;
  in.params = 1'000'000'000;
  in.gpus = 8;
  in.gpu_memory = 24'000'000'000;
  in.activation_bytes = 24'000'000'000;
  in.activations_given = true;
  EXPECT_EQ(error_of(in), "");
  PlanReport r = make_plan(in);
  EXPECT_TRUE(r.activations_fill_gpu);
  EXPECT_EQ(*r.budget, 0u);
  for (const StageReport& s : r.stages) {
    EXPECT_FALSE(*s.fits);
    EXPECT_FALSE(s.min_gpus.has_value());  // no N brings a stage in
  }
  EXPECT_FALSE(r.cheapest_fitting_stage.has_value());
  in.activation_bytes = 23'999'999'999;  // one byte of room is room
  r = make_plan(in);
  EXPECT_FALSE(r.activations_fill_gpu);
  EXPECT_EQ(*r.budget, 1u);
}

TEST(MakePlan, EachActivationChoiceIsPlannedAgainAndKeptOnlyWhenItFits) {
  // 1e9 params at 16 B on 8 GPUs: ZeRO-2 holds 2 + 14/8 = 3.75 GB and ZeRO-3 2 GB, so 24 GB
  // of memory takes at most 20.25 GB of activations with ZeRO-2 and 22 GB with ZeRO-3. Of
  // three choices, the two below that fit, each with the cheapest stage it fits.
  PlanInputs in;
  in.params = 1'000'000'000;
  in.gpus = 8;
  in.gpu_memory = 24'000'000'000;
  in.activation_bytes = 30'000'000'000;
  in.activations_given = true;
  in.activation_choices = {{"a", 23'000'000'000}, {"b", 20'000'000'000}, {"c", 1'000'000'000}};
  const PlanReport r = make_plan(in);
  ASSERT_EQ(r.fitting_changes.size(), 2u);
  EXPECT_EQ(r.fitting_changes[0].change, "b");
  EXPECT_EQ(r.fitting_changes[0].stage, 2);  // 20 + 3.75 <= 24
  EXPECT_EQ(r.fitting_changes[0].total_bytes, 23'750'000'000u);
  EXPECT_EQ(r.fitting_changes[1].change, "c");
  EXPECT_EQ(r.fitting_changes[1].stage, 0);  // 1 + 16 <= 24: DP, the cheapest in bytes sent
  EXPECT_EQ(r.fitting_changes[1].total_bytes, 17'000'000'000u);
  // A stage asked for: a change is kept with that stage when it fits there (ZeRO-1 holds
  // 4 + 12/8 = 5.5 GB), else with the cheapest stage that fits at N.
  in.configured_stage = Stage::zero1;
  const PlanReport asked = make_plan(in);
  ASSERT_EQ(asked.fitting_changes.size(), 2u);
  EXPECT_EQ(asked.fitting_changes[0].change, "b");
  EXPECT_EQ(asked.fitting_changes[0].stage, 2);  // 20 + 5.5 > 24, 20 + 3.75 <= 24
  EXPECT_EQ(asked.fitting_changes[0].total_bytes, 23'750'000'000u);
  EXPECT_FALSE(asked.fitting_changes[0].gpus);
  EXPECT_EQ(asked.fitting_changes[1].change, "c");
  EXPECT_EQ(asked.fitting_changes[1].stage, 1);
  EXPECT_EQ(asked.fitting_changes[1].total_bytes, 6'500'000'000u);
  // A change that fits no stage at N is kept on the least N of the stage asked for, planned
  // again there, but only when no change fits on the GPUs there are. With 23 GB of activations
  // ZeRO-3 needs 16/N <= 1 GB: N = 16, where it holds 23 + 1 = 24 GB (equality fits).
  in.configured_stage = Stage::zero3;
  in.activation_choices = {{"a", 23'000'000'000}};
  const PlanReport more = make_plan(in);
  ASSERT_EQ(more.fitting_changes.size(), 1u);
  EXPECT_EQ(more.fitting_changes[0].stage, 3);
  EXPECT_EQ(more.fitting_changes[0].gpus, 16u);
  EXPECT_EQ(more.fitting_changes[0].total_bytes, 24'000'000'000u);
  in.activation_choices = {{"a", 23'000'000'000}, {"c", 1'000'000'000}};
  const PlanReport both = make_plan(in);
  ASSERT_EQ(both.fitting_changes.size(), 1u);
  EXPECT_EQ(both.fitting_changes[0].change, "c");
  EXPECT_FALSE(both.fitting_changes[0].gpus);
  // When the plan fits as it is, nothing is suggested.
  in.activation_bytes = 1'000'000'000;
  EXPECT_TRUE(make_plan(in).fitting_changes.empty());
}

TEST(MakePlan, RejectsByteCountsBeyondSixtyFourBits) {
  PlanInputs in;
  in.params = 2'000'000'000'000'000'000ull;  // 2e18 · 16 bytes
  EXPECT_TRUE(starts_with(error_of(in), "params: ")) << error_of(in);
  in.params = 1'000'000'000'000'000'000ull;  // 1.6e19 bytes fits; with activations it does not
  in.activation_bytes = 3'000'000'000'000'000'000ull;
  in.activations_given = true;
  EXPECT_TRUE(starts_with(error_of(in), "activations: ")) << error_of(in);
}

TEST(MakePlan, LeavesUndeterminedCellsEmpty) {
  PlanInputs in;
  in.params = 1'000'000'000;
  const PlanReport floors_only = make_plan(in);
  for (const StageReport& s : floors_only.stages) {
    EXPECT_TRUE(s.floor_bytes);
    EXPECT_FALSE(s.model_state_bytes);
    EXPECT_FALSE(s.fits);
    EXPECT_FALSE(s.min_gpus);
    EXPECT_FALSE(s.max_params);
    EXPECT_FALSE(s.comm_seed);
    EXPECT_FALSE(s.time);
  }
  EXPECT_FALSE(floors_only.cheapest_fitting_stage);
  EXPECT_FALSE(floors_only.activations_dominate);
}

TEST(MakePlan, CheapestStageThatFitsIsTheFirstInCommunicationOrder) {
  PlanInputs in;
  in.params = 1'000'000'000;
  in.gpus = 8;
  in.gpu_memory = 6'000'000'000;  // DP 16 GB ✗, ZeRO-1 5.5 GB ✓
  EXPECT_EQ(make_plan(in).cheapest_fitting_stage, 1);
  in.gpu_memory = 16'000'000'000;  // DP fits exactly
  EXPECT_EQ(make_plan(in).cheapest_fitting_stage, 0);
  in.gpu_memory = 3'750'000'000;  // ZeRO-2 fits exactly
  EXPECT_EQ(make_plan(in).cheapest_fitting_stage, 2);
}

TEST(MakePlan, InverseGivesTheLargestModelPerStage) {
  PlanInputs in;
  in.gpus = 8;
  in.gpu_memory = 80'000'000'000;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(*r.stages[0].max_params, 5'000'000'000u);
  EXPECT_EQ(*r.stages[3].max_params, 40'000'000'000u);
  EXPECT_FALSE(r.stages[0].model_state_bytes);
}

TEST(MakePlan, CommunicationTimeUsesTheChosenColumn) {
  PlanInputs in;
  in.params = 175'000'000'000;
  in.gpus = 64;
  in.compute_seconds = 10;
  in.bandwidth = 300e9;
  EXPECT_EQ(*make_plan(in).stages[0].time_comm_bytes, *make_plan(in).stages[0].comm_ring);
  in.time_convention = CommConvention::seed;
  in.seed_directions = plan::Directions::both;
  const PlanReport r = make_plan(in);
  EXPECT_EQ(*r.stages[3].time_comm_bytes, *r.stages[3].comm_seed);
  EXPECT_NEAR(r.stages[3].time->comm_seconds, 6.89, 0.005);  // 2.0672 TB / 300 GB/s
}

// Found by fuzz/plan_inputs_fuzzer.cc: any positive finite --bandwidth parses, but one that
// makes the step's bytes take more seconds than a double holds has no time to print.
TEST(MakePlan, RejectsABandwidthWhoseTimeIsNotFinite) {
  PlanInputs in;
  in.params = 1'000'000'000;
  in.gpus = 8;
  in.compute_seconds = 1.0;
  in.bandwidth = 1e-300;
  EXPECT_TRUE(starts_with(error_of(in), "bandwidth: expected a bandwidth at which"))
      << error_of(in);
}

// Found by fuzz/plan_inputs_fuzzer.cc: a bandwidth beyond 2^64 B/s was cast to an integer.
TEST(PlanTable, PrintsAnyBandwidth) {
  PlanInputs in;
  in.params = 1'000'000'000;
  in.gpus = 8;
  in.compute_seconds = 1.0;
  in.bandwidth = 2.5e180;
  EXPECT_NE(plan_table(make_plan(in)).find("bandwidth 2.5e+180 B/s per GPU"), std::string::npos);
  in.bandwidth = 0.5;
  EXPECT_NE(plan_table(make_plan(in)).find("bandwidth 0.5 B/s per GPU"), std::string::npos);
}

TEST(PlanTable, NamesItsConventionsAndShowsTheSeedFigures) {
  PlanInputs in;
  in.params = 1'000'000'000;
  in.gpus = 8;
  const std::string table = plan_table(make_plan(in));
  for (const char* text : {"16.00 GB", "5.50 GB", "3.75 GB", "2.00 GB", "4.00 GB", "comm seed",
                           "comm ring", "one direction", "busiest rank"}) {
    EXPECT_NE(table.find(text), std::string::npos) << text << "\n" << table;
  }
  EXPECT_NE(plan_table(make_plan(in), true).find("14.90 GiB"), std::string::npos);  // 16e9 B
}

TEST(PlanJson, HasTheContractKeys) {
  PlanInputs in;
  in.params = 1'000'000'000;
  in.gpus = 8;
  const auto j = nlohmann::ordered_json::parse(plan_json(make_plan(in)));
  ASSERT_EQ(j["stages"].size(), 4u);
  for (int s = 0; s < 4; ++s) {
    const auto& st = j["stages"][s];
    EXPECT_EQ(st["stage"], s);
    for (const char* key :
         {"model_state_bytes", "total_bytes", "floor_bytes", "fits", "min_gpus", "max_params",
          "comm_bytes_per_gpu", "comm_seconds", "exposed_seconds", "efficiency"}) {
      EXPECT_TRUE(st.contains(key)) << key;
    }
    EXPECT_TRUE(st["comm_bytes_per_gpu"].contains("seed"));
    EXPECT_TRUE(st["comm_bytes_per_gpu"].contains("ring"));
  }
  EXPECT_TRUE(j.contains("cheapest_fitting_stage"));
  EXPECT_TRUE(j["cheapest_fitting_stage"].is_null());
  EXPECT_EQ(j["stages"][1]["model_state_bytes"], 5'500'000'000u);
}

}  // namespace
}  // namespace zerodp::report
