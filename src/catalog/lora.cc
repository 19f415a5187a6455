#include "zerodp/catalog/lora.h"

#include <algorithm>

#include "zerodp/common/error.h"

namespace zerodp::catalog {
namespace {

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

std::vector<std::string_view> dotted_parts(std::string_view s) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const std::size_t dot = s.find('.', at);
    parts.push_back(s.substr(at, dot == std::string_view::npos ? dot : dot - at));
    if (dot == std::string_view::npos) return parts;
    at = dot + 1;
  }
}

bool is_index(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// PEFT's match: the target is the name, or the name ends with "." + target. Targets naming
// one expert by its index are refused before they get here, so "*" matches nothing.
bool names(std::string_view target, std::string_view linear) {
  const std::vector<std::string_view> t = dotted_parts(target), l = dotted_parts(linear);
  if (t.size() > l.size()) return false;
  return std::equal(t.begin(), t.end(), l.end() - std::ptrdiff_t(t.size()));
}

}  // namespace

std::string linear_layer_names(const ModelConfig& config) {
  std::string out;
  for (const LinearLayer& l : linear_layers(config)) {
    if (out.find(std::string(l.name)) != std::string::npos) continue;
    out += (out.empty() ? "" : ", ") + std::string(l.name);
  }
  return out;
}

LoraCount lora_count(const ModelConfig& config, std::uint64_t rank,
                     std::span<const std::string> targets, std::string_view flag) {
  const std::string f(flag);
  if (rank == 0) throw UsageError(f + ": a LoRA rank must be 1 or more");
  if (targets.empty()) throw UsageError(f + ": expected the linears to adapt, or all-linear");
  const bool all_linear = std::find(targets.begin(), targets.end(), "all-linear") != targets.end();
  if (all_linear && targets.size() > 1) {
    throw UsageError(f + ": all-linear names every linear but the output layer; give it alone");
  }
  const std::vector<LinearLayer> linears = linear_layers(config);
  std::vector<bool> chosen(linears.size(), all_linear);
  if (all_linear) {
    for (std::size_t i = 0; i < linears.size(); ++i) chosen[i] = !linears[i].head;
  }
  for (const std::string& target : targets) {
    if (all_linear) break;
    if (target.empty()) throw UsageError(f + ": an empty name in the list");
    const std::vector<std::string_view> parts = dotted_parts(target);
    if (std::any_of(parts.begin(), parts.end(), is_index)) {
      throw UsageError(f + ": '" + escape_controls(target.substr(0, 100)) +
                       "' names one layer or expert by its index; give the name without it "
                       "(every layer's, every expert's)");
    }
    bool found = false;
    for (std::size_t i = 0; i < linears.size(); ++i) {
      if (names(target, linears[i].name)) chosen[i] = found = true;
    }
    if (!found) {
      throw UsageError(f + ": '" + escape_controls(target.substr(0, 100)) +
                       "' names no linear of " + config.model_type +
                       "; its linears: " + linear_layer_names(config) + ", or all-linear");
    }
  }
  LoraCount count;
  for (std::size_t i = 0; i < linears.size(); ++i) {
    if (!chosen[i]) continue;
    const LinearLayer& l = linears[i];
    LoraTarget t{l.name, l.in, l.out, l.count,
                 saturating_mul(saturating_mul(rank, saturating_add(l.in, l.out)), l.count)};
    count.adapter_params = saturating_add(count.adapter_params, t.adapter_params);
    count.adapted_params =
        saturating_add(count.adapted_params, saturating_mul(saturating_mul(l.in, l.out), l.count));
    count.targets.push_back(t);
  }
  return count;
}

}  // namespace zerodp::catalog
