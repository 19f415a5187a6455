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

std::uint64_t nf4_tensor_bytes(std::uint64_t n, const Nf4Options& o) {
  ZERODP_CHECK(o.block > 0 &&
               (o.storage_bytes == 1 || o.storage_bytes == 2 || o.storage_bytes == 4));
  const std::uint64_t s = o.storage_bytes;
  // quantize_4bit's allocation: (n + 1) // (2·s) elements of the storage type, without
  // forming n + 1.
  const std::uint64_t codes = saturating_mul(s, n / (2 * s) + (n % (2 * s) + 1 == 2 * s ? 1 : 0));
  const std::uint64_t blocks = n / o.block + (n % o.block != 0 ? 1 : 0);
  constexpr std::uint64_t kNf4Table = 16 * 4, kDynamicMap = 256 * 4, kOffset = 4;
  std::uint64_t absmax = saturating_mul(4, blocks);
  if (o.double_quant) {
    absmax = saturating_add(
        saturating_add(blocks, saturating_mul(4, blocks / 256 + (blocks % 256 != 0 ? 1 : 0))),
        kDynamicMap + kOffset);
  }
  return saturating_add(saturating_add(codes, absmax), kNf4Table);
}

QuantizedBase nf4_base(const ModelConfig& config, const Nf4Options& options) {
  QuantizedBase base;
  for (const LinearLayer& l : linear_layers(config)) {
    if (l.head) continue;
    const std::uint64_t elements = saturating_mul(l.in, l.out);
    base.quantized_params =
        saturating_add(base.quantized_params, saturating_mul(elements, l.count));
    base.quantized_tensors = saturating_add(base.quantized_tensors, l.count);
    base.quantized_bytes = saturating_add(
        base.quantized_bytes, saturating_mul(nf4_tensor_bytes(elements, options), l.count));
    base.largest_quantized = std::max(base.largest_quantized, elements);
  }
  const std::uint64_t all = model_params(config).params;
  base.kept_params = all >= base.quantized_params ? all - base.quantized_params : 0;
  return base;
}

}  // namespace zerodp::catalog
