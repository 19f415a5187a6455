#include "zerodp/common/zeropp.h"

#include <string>

#include "zerodp/common/error.h"

namespace zerodp {

std::string ZeroPlusPlus::words() const {
  std::string out;
  for (auto [on, word] : {std::pair{qwz, "qwz"}, std::pair{hpz, "hpz"}, std::pair{qgz, "qgz"}}) {
    if (!on) continue;
    if (!out.empty()) out += ',';
    out += word;
  }
  return out.empty() ? "none" : out;
}

ZeroPlusPlus parse_zeropp(std::string_view text, std::string_view input) {
  ZeroPlusPlus z;
  if (text == "none") return z;
  auto refuse = [&] {
    return UsageError(std::string(input) +
                      ": expected none or a list of qwz, hpz, qgz such as qwz,hpz,qgz, got " +
                      shown(text));
  };
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    bool* on = item == "qwz" ? &z.qwz : item == "hpz" ? &z.hpz : item == "qgz" ? &z.qgz : nullptr;
    if (on == nullptr || *on) throw refuse();
    *on = true;
  }
  return z;
}

std::string zeropp_stage_refusal(const ZeroPlusPlus& zeropp, Stage stage) {
  if (stage == Stage::zero3) return {};
  const struct {
    bool on;
    const char* what;
  } parts[] = {{zeropp.qwz, "qwz quantizes stage 3's parameter gathers"},
               {zeropp.qgz, "qgz quantizes stage 3's gradient reductions"},
               {zeropp.hpz, "hpz keeps stage 3's parameters inside each host"}};
  for (const auto& part : parts) {
    if (part.on) {
      return std::string(part.what) + "; expected stage 3, got stage " +
             std::to_string(stage_number(stage));
    }
  }
  return {};
}

}  // namespace zerodp
