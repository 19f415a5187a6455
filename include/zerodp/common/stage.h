// The ZeRO stage, shared by the planner and the engine, and the one place that says what each
// stage shards across the ranks:
//
//   stage        optimizer states  gradients  parameters
//   0 (DP)       -                 -          -
//   1 (ZeRO-1)   sharded           -          -
//   2 (ZeRO-2)   sharded           sharded    -
//   3 (ZeRO-3)   sharded           sharded    sharded
//
// Contract:
//  - Code that depends on what a stage shards asks sharding(stage), never the stage number:
//    the planner's memory formulas and the engine's buffers, reducer and gatherer then cannot
//    disagree about a stage.
//  - Each stage shards what the previous one shards, and one thing more (the stages are
//    ordered by increasing communication, the order of kStages).
//  - The number of a stage (0-3) is what the command line takes and what JSON prints.
//  - Pure functions: safe from any thread.
#pragma once

#include <array>
#include <string_view>

namespace zerodp {

enum class Stage : int { dp = 0, zero1 = 1, zero2 = 2, zero3 = 3 };

// Every stage, in order of increasing communication: the order in which "the cheapest stage
// that fits" is searched and in which tables list them.
inline constexpr std::array<Stage, 4> kStages = {Stage::dp, Stage::zero1, Stage::zero2,
                                                 Stage::zero3};

// Which model states a stage cuts into one shard per rank; what is not sharded, every rank
// holds whole.
struct Sharding {
  bool optimizer_states = false;  // fp32 master copy and the optimizer's moments
  bool gradients = false;         // 16-bit gradients
  bool parameters = false;        // 16-bit working parameters
  bool operator==(const Sharding&) const = default;
};

constexpr Sharding sharding(Stage stage) {
  switch (stage) {
    case Stage::dp:
      return {false, false, false};
    case Stage::zero1:
      return {true, false, false};
    case Stage::zero2:
      return {true, true, false};
    case Stage::zero3:
      return {true, true, true};
  }
  return {};  // not a stage: stage_from_number() keeps such values out
}

constexpr int stage_number(Stage stage) {
  return static_cast<int>(stage);
}

// The name tables and notes print: "DP", "ZeRO-1", "ZeRO-2", "ZeRO-3".
std::string_view stage_name(Stage stage);

// The stage of a number 0-3. Throws UsageError "--stage: expected 0, 1, 2 or 3, got <number>".
Stage stage_from_number(int number);

// The stage of the command line's --stage text, one digit 0-3. Throws UsageError
// "--stage: expected 0, 1, 2 or 3, got '<text>'".
Stage parse_stage(std::string_view text);

}  // namespace zerodp
