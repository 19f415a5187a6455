#include "zerodp/ledger.h"

#include <algorithm>

#include "zerodp/error.h"

namespace zerodp {

std::string_view category_name(Category c) {
  static constexpr std::array<std::string_view, kCategoryCount> names = {
      "params16",        "grads16", "master32",  "adam_m",       "adam_v",
      "gathered_params", "buckets", "scratch32", "comm_buffers", "activations"};
  return names[static_cast<int>(c)];
}

void Ledger::add(Category c, std::size_t bytes) {
  auto i = static_cast<int>(c);
  live_[i] += bytes;
  live_total_ += bytes;
  peak_[i] = std::max(peak_[i], live_[i]);
  peak_total_ = std::max(peak_total_, live_total_);
}

void Ledger::remove(Category c, std::size_t bytes) {
  auto i = static_cast<int>(c);
  ZERODP_CHECK(live_[i] >= bytes);
  live_[i] -= bytes;
  live_total_ -= bytes;
}

void Ledger::set(Category c, std::size_t bytes) {
  const std::size_t now = live(c);
  if (bytes >= now) {
    add(c, bytes - now);
  } else {
    remove(c, now - bytes);
  }
}

std::size_t Ledger::model_state_bytes() const {
  std::size_t total = 0;
  for (int i = 0; i < kCategoryCount; ++i) {
    if (is_model_state(static_cast<Category>(i))) total += live_[i];
  }
  return total;
}

}  // namespace zerodp
