#include "zerodp/common/stage.h"

#include <string>

#include "zerodp/common/error.h"

namespace zerodp {
namespace {

std::string expected_stage() {
  return field_ref("stage") + ": expected 0, 1, 2 or 3, got ";
}

}  // namespace

std::string_view stage_name(Stage stage) {
  switch (stage) {
    case Stage::dp:
      return "DP";
    case Stage::zero1:
      return "ZeRO-1";
    case Stage::zero2:
      return "ZeRO-2";
    case Stage::zero3:
      return "ZeRO-3";
  }
  return "?";
}

Stage stage_from_number(int number) {
  if (number < 0 || number > 3)
    throw InvalidArgument("stage", expected_stage() + std::to_string(number));
  return static_cast<Stage>(number);
}

Stage parse_stage(std::string_view text) {
  if (text.size() != 1 || text[0] < '0' || text[0] > '3') {
    throw InvalidArgument("stage", expected_stage() + shown(text));
  }
  return static_cast<Stage>(text[0] - '0');
}

}  // namespace zerodp
