// A JSON value zerodp writes, made valid UTF-8 before it is written: every string (keys too)
// through utf8_text() (zerodp/common/json_text.h). A value may hold a name from the file
// system (a Latin-1 file name is bytes, not UTF-8), and the JSON writer refuses such a string
// with an exception, which would end the command instead of printing it.
//
// Contract: header-only (its users have nlohmann::json already); recursion as deep as the
// value, which zerodp builds itself (a few levels), never from a file's nesting.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "zerodp/common/json_text.h"

namespace zerodp {

// Json: nlohmann::json or nlohmann::ordered_json (whose keys keep their order).
template <class Json>
void make_utf8(Json& value) {
  if (value.is_string()) {
    std::string& text = value.template get_ref<std::string&>();
    std::string valid = utf8_text(text);
    if (valid.size() != text.size() || valid != text) text = std::move(valid);
    return;
  }
  if (value.is_array()) {
    for (Json& item : value) make_utf8(item);
    return;
  }
  if (!value.is_object()) return;
  // Rebuilt in order, so an ordered value keeps its keys' order.
  Json rebuilt = Json::object();
  for (auto& [key, item] : value.items()) {
    make_utf8(item);
    rebuilt[utf8_text(key)] = std::move(item);
  }
  value = std::move(rebuilt);
}

// The value's text as dump(indent) writes it, its strings made valid UTF-8 first.
template <class Json>
std::string utf8_dump(Json value, int indent = -1) {
  make_utf8(value);
  return value.dump(indent);
}

}  // namespace zerodp
