#include "zerodp/data/samples.h"

#include <cmath>
#include <utility>

#include "zerodp/common/error.h"
#include "zerodp/common/rng.h"

namespace zerodp::data {

TextWindows::TextWindows(std::shared_ptr<const TextData> text, std::uint64_t seed)
    : text_(std::move(text)), seed_(seed) {
  ZERODP_CHECK(text_ != nullptr);
}

void TextWindows::draw(Split split, std::uint64_t first, std::size_t count, Batch& batch) const {
  const std::size_t w = text_->window_bytes();
  batch.samples = count;
  batch.tokens.resize(count * w);
  for (std::size_t b = 0; b < count; ++b) {
    text_->window(split, seed_, first + b, {batch.tokens.data() + b * w, w});
  }
}

namespace {
// Held-out samples start here: no run draws 2^62 training samples.
constexpr std::uint64_t kValidationBase = std::uint64_t{1} << 62;
}  // namespace

SyntheticRegression::SyntheticRegression(std::size_t width, std::uint64_t seed)
    : width_(width), seed_(seed) {
  ZERODP_CHECK(width_ > 0);
}

void SyntheticRegression::draw(Split split, std::uint64_t first, std::size_t count,
                               Batch& batch) const {
  const std::size_t W = width_;
  const std::uint64_t base = split == Split::validation ? kValidationBase : 0;
  batch.samples = count;
  batch.inputs.resize(count * W);
  batch.targets.resize(count * W);
  for (std::size_t b = 0; b < count; ++b) {
    const std::uint64_t sample = base + first + b;
    float* x = batch.inputs.data() + b * W;
    for (std::size_t j = 0; j < W; ++j) x[j] = counter_normal(seed_, sample, j);
    float* y = batch.targets.data() + b * W;
    for (std::size_t j = 0; j < W; ++j) {
      y[j] = 0.5f * std::sin(2.0f * x[j]) + 0.25f * std::fabs(x[(j + 1) % W]);
    }
  }
}

}  // namespace zerodp::data
