#include "zerodp/common/ledger.h"

#include <algorithm>

#include "zerodp/common/units.h"

namespace zerodp {

std::string_view category_name(Category c) {
  static constexpr std::array<std::string_view, kCategoryCount> names = {
      "params16",        "grads16", "master32",  "optim_m",      "optim_v",
      "gathered_params", "buckets", "scratch32", "comm_buffers", "activations"};
  return names[static_cast<int>(c)];
}

std::string_view phase_name(Phase p) {
  static constexpr std::array<std::string_view, kPhaseCount> names = {"setup", "forward",
                                                                      "backward", "optimizer"};
  return names[static_cast<int>(p)];
}

namespace {
// In the units people read, unless the rounding would hide the difference that matters (the
// total against the budget): then every figure to the byte.
std::string refusal(int rank, Category category, std::size_t asked, std::size_t held,
                    std::size_t allowed) {
  const bool exact = units::format_bytes(held + asked) == units::format_bytes(allowed);
  auto bytes = [exact](std::size_t b) {
    return exact ? std::to_string(b) + " B" : units::format_bytes(b);
  };
  return "rank " + std::to_string(rank) + ": " + bytes(asked) + " of " +
         std::string(category_name(category)) + " would take the rank to " + bytes(held + asked) +
         ", above its memory budget of " + bytes(allowed) + " (it holds " + bytes(held) + ")";
}
}  // namespace

BudgetExceeded::BudgetExceeded(int rank, Category category, std::size_t asked, std::size_t held,
                               std::size_t allowed)
    : Error(refusal(rank, category, asked, held, allowed)),
      rank(rank),
      category(category),
      asked(asked),
      held(held),
      allowed(allowed) {}

Ledger::Ledger(const Ledger& other) {
  *this = other;
}

Ledger& Ledger::operator=(const Ledger& other) {
  if (this == &other) return *this;
  std::scoped_lock lock(mu_, other.mu_);
  live_ = other.live_, peak_ = other.peak_, at_peak_ = other.at_peak_;
  live_total_ = other.live_total_, peak_total_ = other.peak_total_;
  budget_ = other.budget_, rank_ = other.rank_;
  phase_ = other.phase_, peak_phase_ = other.peak_phase_;
  return *this;
}

void Ledger::set_budget(std::size_t bytes) {
  std::lock_guard lock(mu_);
  budget_ = bytes;
}
void Ledger::set_rank(int rank) {
  std::lock_guard lock(mu_);
  rank_ = rank;
}
std::size_t Ledger::budget() const {
  std::lock_guard lock(mu_);
  return budget_;
}
void Ledger::set_phase(Phase phase) {
  std::lock_guard lock(mu_);
  phase_ = phase;
}

void Ledger::add(Category c, std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (budget_ > 0 && (bytes > budget_ || live_total_ > budget_ - bytes)) {
    throw BudgetExceeded(rank_, c, bytes, live_total_, budget_);
  }
  auto i = static_cast<int>(c);
  live_[i] += bytes;
  live_total_ += bytes;
  peak_[i] = std::max(peak_[i], live_[i]);
  if (live_total_ > peak_total_) {
    peak_total_ = live_total_;
    at_peak_ = live_;
    peak_phase_ = phase_;
  }
}

void Ledger::remove(Category c, std::size_t bytes) {
  std::lock_guard lock(mu_);
  auto i = static_cast<int>(c);
  ZERODP_CHECK(live_[i] >= bytes);
  live_[i] -= bytes;
  live_total_ -= bytes;
}

std::size_t Ledger::live(Category c) const {
  std::lock_guard lock(mu_);
  return live_[static_cast<int>(c)];
}
std::size_t Ledger::peak(Category c) const {
  std::lock_guard lock(mu_);
  return peak_[static_cast<int>(c)];
}
std::size_t Ledger::at_peak(Category c) const {
  std::lock_guard lock(mu_);
  return at_peak_[static_cast<int>(c)];
}
std::size_t Ledger::live_total() const {
  std::lock_guard lock(mu_);
  return live_total_;
}
std::size_t Ledger::peak_total() const {
  std::lock_guard lock(mu_);
  return peak_total_;
}
Phase Ledger::peak_phase() const {
  std::lock_guard lock(mu_);
  return peak_phase_;
}

std::size_t Ledger::model_state_bytes() const {
  std::lock_guard lock(mu_);
  std::size_t total = 0;
  for (int i = 0; i < kCategoryCount; ++i) {
    if (is_model_state(static_cast<Category>(i))) total += live_[i];
  }
  return total;
}

}  // namespace zerodp
