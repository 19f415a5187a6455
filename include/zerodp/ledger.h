// The memory ledger: every byte the engine allocates for one rank, tagged by what it is for.
//
// The planner predicts model-state bytes (16-bit params and grads, fp32 master, Adam m and
// v); the ledger measures them, and also what the prediction leaves out (gathered params,
// gradient buckets, fp32 scratch, comm staging buffers, activations), each on its own line,
// so a difference between prediction and measurement is always explained, never hidden.
//
// Buffers are allocated through the ledger and give their bytes back when destroyed; live
// and peak bytes are kept per category and in total. Memory is touched at allocation (the
// first touch of a page is slow here), so a buffer is resident as soon as it is counted.
// Thread-safety: one ledger per rank, used from that rank's thread (and read after join).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace zerodp {

enum class Category : std::uint8_t {
  params16,         // 16-bit parameters this rank holds
  grads16,          // 16-bit gradients this rank holds
  master32,         // fp32 master parameters
  adam_m,           // fp32 first moment
  adam_v,           // fp32 second moment
  gathered_params,  // stage 3: 16-bit params of units gathered for compute
  buckets,          // 16-bit gradient buckets in flight (stage 2, 3)
  scratch32,        // fp32 views of one unit's params and grads for compute
  comm_buffers,     // the communicator's staging buffers
  activations,      // the model's activations and workspace
};
inline constexpr int kCategoryCount = 10;
std::string_view category_name(Category c);
// True for the five categories the planner's model-state formula counts.
constexpr bool is_model_state(Category c) {
  return c <= Category::adam_v;
}

class Ledger {
 public:
  void add(Category c, std::size_t bytes);
  void remove(Category c, std::size_t bytes);
  // Records bytes held outside the ledger's buffers (activations, comm staging) as live now.
  void set(Category c, std::size_t bytes);

  std::size_t live(Category c) const { return live_[static_cast<int>(c)]; }
  std::size_t peak(Category c) const { return peak_[static_cast<int>(c)]; }
  std::size_t live_total() const { return live_total_; }
  std::size_t peak_total() const { return peak_total_; }
  std::size_t model_state_bytes() const;  // live bytes of the model-state categories

 private:
  std::array<std::size_t, kCategoryCount> live_{};
  std::array<std::size_t, kCategoryCount> peak_{};
  std::size_t live_total_ = 0;
  std::size_t peak_total_ = 0;
};

// An array of T counted in a ledger category for as long as it lives.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Ledger& ledger, Category category, std::size_t count)
      : ledger_(&ledger), category_(category), count_(count), data_(new T[count]()) {
    ledger_->add(category_, bytes());
  }
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    release();
    ledger_ = other.ledger_, category_ = other.category_, count_ = other.count_;
    data_ = std::move(other.data_);
    other.ledger_ = nullptr, other.count_ = 0;
    return *this;
  }
  ~Buffer() { release(); }

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
