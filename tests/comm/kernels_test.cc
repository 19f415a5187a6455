// The kernels of the communicator: the reduction against dtype.h's scalar conversions (every
// 16-bit bit pattern as an input, outputs in place, apart, several at once, streamed), and the
// copy on both sides of its streaming threshold at every alignment.
#include "comm/sum.h"

#include "comm/copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "comm/comm_testing.h"

namespace zerodp::comm {
namespace {

using testing::Buffer;

bool is_nan(const Buffer& b, std::size_t i) {
  return std::isnan(b.get(i));
}

// Compares kernel output with the reference; where two NaNs were added the payload depends on
// operand order (x86 returns the first NaN operand), so there only NaN-ness is checked.
void expect_matches(const Buffer& got, const Buffer& want, const std::vector<Buffer>& inputs) {
  for (std::size_t i = 0; i < want.count(); ++i) {
    int nans = 0;
    for (const Buffer& x : inputs) nans += is_nan(x, i);
    if (nans >= 2) {
      ASSERT_TRUE(is_nan(got, i)) << i;
      continue;
    }
    ASSERT_EQ(
        testing::first_difference(got.bytes.data() + i * dtype_size(got.dtype),
                                  want.bytes.data() + i * dtype_size(want.dtype), 1, got.dtype),
        -1)
        << dtype_name(got.dtype) << " element " << i << ": got " << got.get(i) << ", want "
        << want.get(i);
  }
}

TEST(SumInRankOrder, EverySixteenBitPatternAsInput) {
  for (DType dtype : {DType::f16, DType::bf16}) {
    for (int n : {2, 3, 5}) {
      std::vector<Buffer> inputs;
      for (int j = 0; j < n; ++j) {
        Buffer b(dtype, 65536 + 3);  // + 3: a tail past the vector width
        for (std::size_t i = 0; i < b.count(); ++i) {
          const std::uint16_t h = static_cast<std::uint16_t>((i * (2 * j + 1) + 7919 * j) & 0xffff);
          std::memcpy(b.at(i), &h, 2);
        }
        inputs.push_back(b);
      }
      const Buffer want = testing::reference_sum(inputs);
      std::vector<const void*> in;
      for (const Buffer& b : inputs) in.push_back(b.data());
      Buffer apart(dtype, want.count()), second(dtype, want.count());
      void* outs[2] = {apart.data(), second.data()};
      sum_in_rank_order(dtype, in.data(), n, outs, 2, want.count());
      expect_matches(apart, want, inputs);
      expect_matches(second, want, inputs);
      // In place, into the last input and into the first.
      for (int k : {n - 1, 0}) {
        std::vector<Buffer> copy = inputs;
        std::vector<const void*> cin;
        for (const Buffer& b : copy) cin.push_back(b.data());
        void* out = copy[k].data();
        sum_in_rank_order(dtype, cin.data(), n, &out, 1, want.count());
        expect_matches(copy[k], want, inputs);
      }
    }
  }
}

TEST(SumInRankOrder, Fp32InPlaceApartAndStreaming) {
  for (std::size_t count : {std::size_t{1}, std::size_t{2049}, std::size_t{3} << 20}) {
    for (int n : {2, 3, 4}) {
      std::vector<Buffer> inputs;
      for (int j = 0; j < n; ++j) inputs.push_back(testing::rank_input(DType::f32, count, j));
      const Buffer want = testing::reference_sum(inputs);
      std::vector<const void*> in;
      for (const Buffer& b : inputs) in.push_back(b.data());
      Buffer out(DType::f32, count);  // apart, and >= 4 MiB at the largest count: streamed
      void* o = out.data();
      sum_in_rank_order(DType::f32, in.data(), n, &o, 1, count);
      EXPECT_EQ(testing::first_difference(out, want), -1) << count << " " << n;
      std::vector<Buffer> copy = inputs;
      std::vector<const void*> cin;
      std::vector<void*> outs;
      for (Buffer& b : copy) {
        cin.push_back(b.data());
        outs.push_back(b.data());
      }
      sum_in_rank_order(DType::f32, cin.data(), n, outs.data(), n, count);
      for (const Buffer& b : copy) EXPECT_EQ(testing::first_difference(b, want), -1);
    }
  }
}

TEST(CommCopy, CopiesEveryByteAtAnyAlignment) {
  const std::size_t big = (std::size_t{4} << 20) + 131;  // streamed, with a ragged tail
  std::vector<unsigned char> src(big + 64), dst(big + 64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{100}, big}) {
    for (std::size_t shift : {0, 1, 5, 31}) {
      std::fill(dst.begin(), dst.end(), 0xee);
      copy(dst.data() + shift, src.data() + 3, bytes);
      ASSERT_EQ(std::memcmp(dst.data() + shift, src.data() + 3, bytes), 0) << bytes << " " << shift;
      if (shift > 0) {
        ASSERT_EQ(dst[shift - 1], 0xee);
      }
      ASSERT_EQ(dst[shift + bytes], 0xee);
    }
  }
}

}  // namespace
}  // namespace zerodp::comm
