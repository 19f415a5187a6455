// EngineOptions::validate(): every option checked before anything is sized from it.
#include <cmath>
#include <string>

#include "zerodp/common/error.h"
#include "zerodp/common/quantize.h"
#include "zerodp/common/zeropp.h"
#include "zerodp/zero/engine.h"

namespace zerodp::zero {

void EngineOptions::validate() const {
  stage_from_number(stage_number(stage));  // a Stage cast from a number out of range
  if (precision == DType::f32) {
    throw InvalidArgument("precision", field_ref("precision") +
                                           ": expected bf16 or fp16 (the engine stores 16-bit "
                                           "params)");
  }
  if (bucket_bytes < 2) {
    throw InvalidArgument(
        "bucket_bytes",
        field_ref("bucket_bytes") + ": expected a size of at least 2B (one 16-bit element)");
  }
  if (grad_accum < 1) {
    throw InvalidArgument("grad_accum", field_ref("grad_accum") +
                                            ": expected a whole number >= 1, got " +
                                            std::to_string(grad_accum));
  }
  if (micro_batch < 1) {
    throw InvalidArgument("micro_batch",
                          field_ref("micro_batch") + ": expected a whole number >= 1");
  }
  if (!(clip_norm >= 0.0f) || !std::isfinite(clip_norm)) {
    throw InvalidArgument("clip_norm",
                          field_ref("clip_norm") + ": expected a norm >= 0 (0 disables clipping)");
  }
  // ZeRO++'s parts change stage 3's collectives; no other stage has them.
  if (const std::string why = zeropp_stage_refusal(zeropp, stage); !why.empty()) {
    throw InvalidArgument("zeropp", field_ref("zeropp") + ": " + why);
  }
  if (ranks_per_host < 0) {
    throw InvalidArgument("ranks_per_host",
                          field_ref("ranks_per_host") + ": expected a whole number >= 1");
  }
  if (qwz_block < 1 || qwz_block > kMaxQuantBlock) {
    throw InvalidArgument("qwz_block", field_ref("qwz_block") + ": expected 1 to " +
                                           std::to_string(kMaxQuantBlock) + " elements, got " +
                                           std::to_string(qwz_block));
  }
  if (!rule_for_tests && !optim::engine_rule(optimizer)) {
    throw InvalidArgument("optimizer", field_ref("optimizer") + ": the engine trains with " +
                                           optim::engine_optimizer_words() + "; " +
                                           std::string(optimizer_row(optimizer).word) +
                                           " is counted by the planner (zerodp plan), not run");
  }
  if (const optim::Rule* r = rule_for_tests) {
    ZERODP_CHECK_MSG(r->row && r->step && r->row->slots.size() <= 2 && r->row->fp32_master,
                     "a test's rule: a row of at most two fp32 slots with an fp32 master, and a "
                     "step");
  }
}

const optim::Rule& EngineOptions::rule() const {
  if (rule_for_tests) return *rule_for_tests;
  const optim::Rule* r = optim::engine_rule(optimizer);
  ZERODP_CHECK_MSG(r, "EngineOptions::rule(): validate() first");
  return *r;
}

optim::Hyper EngineOptions::step_hyper() const {
  return hyper ? *hyper : rule().defaults;
}

}  // namespace zerodp::zero
