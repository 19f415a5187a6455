// The memory ledger: every byte a rank allocates that grows with the model, the batch or the
// ranks, tagged by what it is for, and optionally held under a budget.
//
// The planner predicts a rank's peak by the same categories (zerodp/predict/peak.h); the ledger
// measures it: model state (16-bit params and grads, fp32 master, the optimizer's m and v),
// gathered params, gradient buckets, fp32 scratch, the communicator's staging and the model's
// activations, each on its own line, so a difference between prediction and measurement is
// always explained, never hidden. docs/memory.md lists what is left outside and its size.
//
// Contract:
//  - Buffers are allocated through the ledger and give their bytes back when destroyed; live
//    and peak bytes are kept per category and in total, with the phase of the step (set by
//    the engine) at which the total peak was first reached.
//  - Budget: with set_budget(B), an allocation that would take the live total above B is
//    refused before any memory is taken: it throws BudgetExceeded naming the rank, the
//    category, the bytes asked, held and allowed. A total of exactly B is allowed.
//  - Memory is touched at allocation (the first touch of a page is slow here), so a buffer is
//    resident as soon as it is counted.
//  - Thread-safety: all methods may be called from any thread (a communicator's progress
//    thread allocates its staging while the rank's thread computes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "zerodp/common/error.h"

namespace zerodp {

enum class Category : std::uint8_t {
  params16,         // 16-bit parameters this rank holds
  grads16,          // 16-bit gradients this rank holds
  master32,         // fp32 master parameters
  optim_m,          // the optimizer's fp32 first-moment slot (AdamW's and Lion's m, SGD's momentum)
  optim_v,          // the optimizer's fp32 second-moment slot (AdamW's v)
  gathered_params,  // stage 3: 16-bit params of units gathered for compute
  buckets,          // 16-bit gradient buckets in flight (stage 2, 3)
  scratch32,        // fp32 views of one unit's params and grads for compute
  comm_buffers,     // the communicator's staging buffers
  activations,      // the model's activations and workspace, as it allocates them
};
inline constexpr int kCategoryCount = 10;
std::string_view category_name(Category c);
// True for the five categories the planner's model-state formula counts.
constexpr bool is_model_state(Category c) {
  return c <= Category::optim_v;
}

// Where in a step an allocation happens; the order is the order within a step.
enum class Phase : std::uint8_t { setup, forward, backward, optimizer };
inline constexpr int kPhaseCount = 4;
std::string_view phase_name(Phase p);

// An allocation the budget refuses. what() is one line, e.g. "rank 1: the memory budget
// (--rank-memory 40.00 MB) refuses 12.58 MB of activations: the rank holds 30.20 MB, so it
// would hold 42.78 MB".
class BudgetExceeded : public Error {
 public:
  BudgetExceeded(int rank, Category category, std::size_t asked, std::size_t held,
                 std::size_t allowed);
  int rank;
  Category category;
  std::size_t asked, held, allowed;
};

class Ledger {
 public:
  Ledger() = default;
  Ledger(const Ledger& other);  // a snapshot of the counts, budget and rank
  Ledger& operator=(const Ledger& other);

  // 0: no budget. The rank names the refusal's owner.
  void set_budget(std::size_t bytes);
  void set_rank(int rank);
  std::size_t budget() const;
  void set_phase(Phase phase);

  // Throws BudgetExceeded (and counts nothing) when the budget refuses.
  void add(Category c, std::size_t bytes);
  void remove(Category c, std::size_t bytes);

  std::size_t live(Category c) const;
  std::size_t peak(Category c) const;
  // Bytes of category c held when the total peak was first reached.
  std::size_t at_peak(Category c) const;
  std::size_t live_total() const;
  std::size_t peak_total() const;
  Phase peak_phase() const;               // the phase at which the total peak was first reached
  std::size_t model_state_bytes() const;  // live bytes of the model-state categories

 private:
  mutable std::mutex mu_;
  std::array<std::size_t, kCategoryCount> live_{};
  std::array<std::size_t, kCategoryCount> peak_{};
  std::array<std::size_t, kCategoryCount> at_peak_{};
  std::size_t live_total_ = 0;
  std::size_t peak_total_ = 0;
  std::size_t budget_ = 0;
  int rank_ = 0;
  Phase phase_ = Phase::setup;
  Phase peak_phase_ = Phase::setup;
};

// An array of T counted in a ledger category for as long as it lives. A null ledger counts
// nothing (a model used outside the engine).
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Ledger* ledger, Category category, std::size_t count)
      : ledger_(ledger), category_(category), count_(count) {
    if (ledger_) ledger_->add(category_, bytes());  // refused before anything is allocated
    try {
      data_.reset(new T[count]());
    } catch (...) {
      if (ledger_) ledger_->remove(category_, bytes());
      throw;
    }
  }
  Buffer(Ledger& ledger, Category category, std::size_t count) : Buffer(&ledger, category, count) {}
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    release();
    ledger_ = other.ledger_, category_ = other.category_, count_ = other.count_;
    data_ = std::move(other.data_);
    other.ledger_ = nullptr, other.count_ = 0;
    return *this;
  }
  ~Buffer() { release(); }

  // Counts the buffer in another ledger (or none) from now on. Throws BudgetExceeded (and
  // stays where it was) when the new ledger's budget refuses it.
  void recount(Ledger* ledger) {
    if (ledger == ledger_) return;
    if (ledger) ledger->add(category_, bytes());
    if (ledger_) ledger_->remove(category_, bytes());
    ledger_ = ledger;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  std::span<T> span() { return {data_.get(), count_}; }
  std::span<const T> span() const { return {data_.get(), count_}; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  void release() {
    if (ledger_) ledger_->remove(category_, bytes());
    ledger_ = nullptr, count_ = 0, data_.reset();
  }
  Ledger* ledger_ = nullptr;
  Category category_ = Category::params16;
  std::size_t count_ = 0;
  std::unique_ptr<T[]> data_;
};

}  // namespace zerodp
