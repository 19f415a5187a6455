// SampleSource: where the samples of every micro-batch come from, as a pure function of
// (split, global sample index). The training loop draws from it and hands the samples to the
// model; a model never sees a file, a split or a data seed.
//
// Contract:
//  - draw(split, first, count, batch) fills batch with samples [first, first + count) of the
//    split. Sample i is a pure function of (the source's seed, split, i): any rank draws any
//    sample without reading the others, so N ranks x B samples see exactly the samples of one
//    rank x N*B, and a run resumed at another N continues the same stream.
//  - Sample layouts (what Batch holds, sample after sample):
//      TextWindows:         tokens, window_tokens() bytes a sample (seq_len inputs and the
//                           byte after the last as the last target)
//      SyntheticRegression: inputs and targets, width floats each a sample
//  - Thread-safety: draw() is const and reads immutable state: ranks share one source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zerodp/data/text_data.h"

namespace zerodp::data {

// The samples of one micro-batch. Buffers grow to the largest batch drawn and are reused.
struct Batch {
  std::size_t samples = 0;
  std::vector<std::uint8_t> tokens;  // TextWindows: [samples, window_tokens()]
  std::vector<float> inputs;         // SyntheticRegression: [samples, width]
  std::vector<float> targets;        // SyntheticRegression: [samples, width]
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual void draw(Split split, std::uint64_t first, std::size_t count, Batch& batch) const = 0;
  // Tokens a sample feeds the model (for tokens/s): seq_len for text, 1 for a regression.
  virtual std::size_t tokens_per_sample() const = 0;
};

// Windows of a TextData: train window i for the source's seed, validation window i of the
// sequential sweep (TextData's rules).
class TextWindows final : public SampleSource {
 public:
  TextWindows(std::shared_ptr<const TextData> text, std::uint64_t seed);
  void draw(Split split, std::uint64_t first, std::size_t count, Batch& batch) const override;
  std::size_t tokens_per_sample() const override { return text_->seq_len(); }
  std::size_t window_tokens() const { return text_->window_bytes(); }
  const TextData& text() const { return *text_; }

 private:
  std::shared_ptr<const TextData> text_;
  std::uint64_t seed_;
};

// Endless synthetic samples for a regression: input x of `width` standard normals drawn from
// (seed, i), target y_j = 0.5 sin(2 x_j) + 0.25 |x_{(j+1) mod width}| (a smooth function a
// small MLP can learn). Validation samples are drawn from indices 2^62 on, far from any
// training index.
class SyntheticRegression final : public SampleSource {
 public:
  SyntheticRegression(std::size_t width, std::uint64_t seed);
  void draw(Split split, std::uint64_t first, std::size_t count, Batch& batch) const override;
  std::size_t tokens_per_sample() const override { return 1; }
  std::size_t width() const { return width_; }

 private:
  std::size_t width_;
  std::uint64_t seed_;
};

}  // namespace zerodp::data
