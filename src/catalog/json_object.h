// The catalogue's readers of a file a user hands it (a config.json, an adapter_config.json):
// nesting checked before parsing, a syntax error or a number beyond a double as one bounded
// line naming the source, and the top level required to be an object (`what`: "a config.json").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "zerodp/common/error.h"
#include "zerodp/common/json_text.h"

namespace zerodp::catalog {

inline nlohmann::json parse_json_object(std::string_view text, const std::string& source,
                                        std::string_view what) {
  if (const std::string why = json_depth_refusal(text); !why.empty()) {
    throw UsageError(source + ": " + why);
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(source + ": not JSON (" +
                     escape_controls(std::string(e.what()).substr(0, 200)) + ")");
  }
  if (!j.is_object()) {
    throw UsageError(source + ": expected a JSON object (" + std::string(what) + ")");
  }
  return j;
}

}  // namespace zerodp::catalog
