// Sample sources: a sample is a pure function of (seed, split, index), whoever draws it and
// in whatever batches.
#include "zerodp/data/samples.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace zerodp::data {
namespace {

std::shared_ptr<const TextData> corpus(std::size_t seq_len) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "line " + std::to_string(i * 7919 % 1000) + " of text\n";
  return std::make_shared<const TextData>(std::vector<std::uint8_t>(text.begin(), text.end()),
                                          seq_len);
}

TEST(TextWindows, SampleIIsTheTextsWindowI) {
  const auto text = corpus(16);
  const TextWindows source(text, 42);
  EXPECT_EQ(source.window_tokens(), 17u);
  EXPECT_EQ(source.tokens_per_sample(), 16u);
  Batch batch;
  for (Split split : {Split::train, Split::validation}) {
    source.draw(split, 5, 3, batch);
    ASSERT_EQ(batch.samples, 3u);
    ASSERT_EQ(batch.tokens.size(), 3u * 17);
    std::vector<std::uint8_t> window(17);
    for (std::size_t b = 0; b < 3; ++b) {
      text->window(split, 42, 5 + b, window);
      EXPECT_TRUE(std::equal(window.begin(), window.end(), batch.tokens.begin() + b * 17));
    }
  }
}

TEST(TextWindows, BatchesOfAnySizeDrawTheSameStream) {
  const TextWindows source(corpus(8), 7);
  Batch whole, part;
  source.draw(Split::train, 0, 8, whole);
  for (std::size_t first = 0; first < 8; first += 2) {
    source.draw(Split::train, first, 2, part);
    EXPECT_TRUE(
        std::equal(part.tokens.begin(), part.tokens.end(), whole.tokens.begin() + first * 9));
  }
  const TextWindows other_seed(corpus(8), 8);
  other_seed.draw(Split::train, 0, 8, part);
  EXPECT_NE(part.tokens, whole.tokens);  // another seed draws other windows
}

TEST(SyntheticRegression, SamplesDependOnSeedSplitAndIndexOnly) {
  const SyntheticRegression source(6, 1234);
  Batch whole, part;
  source.draw(Split::train, 10, 4, whole);
  ASSERT_EQ(whole.inputs.size(), 24u);
  ASSERT_EQ(whole.targets.size(), 24u);
  source.draw(Split::train, 12, 2, part);
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(part.inputs[i], whole.inputs[12 + i]);
    EXPECT_EQ(part.targets[i], whole.targets[12 + i]);
  }
  // The target is the documented function of the input, in fp32.
  for (std::size_t b = 0; b < 4; ++b) {
    const float* x = whole.inputs.data() + b * 6;
    for (std::size_t j = 0; j < 6; ++j) {
      const float y = 0.5f * std::sin(2.0f * x[j]) + 0.25f * std::fabs(x[(j + 1) % 6]);
      EXPECT_EQ(whole.targets[b * 6 + j], y);
    }
  }
  Batch held_out;
  source.draw(Split::validation, 10, 4, held_out);
  EXPECT_NE(held_out.inputs, whole.inputs);  // held-out samples are other samples
}

}  // namespace
}  // namespace zerodp::data
