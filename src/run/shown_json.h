// A JSON value of a manifest or a run record as a message shows it: its JSON text (escaped by
// JSON), cut when long (common/error.h's cut_long()), invalid UTF-8 replaced rather than thrown on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "zerodp/common/error.h"

namespace zerodp::run {

inline std::string shown_json(const nlohmann::json& v) {
  return cut_long(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace zerodp::run
