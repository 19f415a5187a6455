// The answer first: what a user who asked "will it fit, on how many GPUs?" reads before any
// table. It renders the plan's own verdicts (report.h) and computes none: each stage's verdict
// at N and its least N, the cheapest stage that fits (with the margin where the peak is
// predicted), the fewest GPUs, and the first change that fits, as the notes and the JSON say
// them.
//
// Contract:
//  - Only a plan that asks the question has an answer: a model size (--params or a model) and a
//    GPU memory; otherwise `lines` is empty and `headline` names the input that would make one.
//  - `lines` are at most kAnswerLines lines of at most kAnswerColumns columns each (names the
//    user gave are escaped and cut to fit); `headline` is one sentence, unwrapped, for a page
//    or a notebook to show as its title.
//  - `verdict` is the verdict the headline speaks of: the stage asked about (--stage, the
//    config's), else the cheapest that fits, else does_not_fit; nullopt without an answer.
//  - Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "zerodp/common/error.h"
#include "zerodp/report/report.h"

namespace zerodp::report {

inline constexpr std::size_t kAnswerLines = 12;
inline constexpr std::size_t kAnswerColumns = 80;

struct Answer {
  std::string headline;
  std::optional<Verdict> verdict;
  // At N, the sentence on the cheapest stage that fits (and the tight one before it), which a
  // page shows under a headline on the stage asked about; "" without N or an answer.
  std::string cheapest;
  std::vector<std::string> lines;
};

// Decimal units (GB) unless `binary`; inputs named by `name` (error.h).
Answer answer_of(const PlanReport& report, bool binary = false,
                 const FieldNamer& name = field_name);

}  // namespace zerodp::report
