#include "zerodp/common/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace zerodp {
namespace {

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.update("a", 1);
  h.update("bc", 2);
  EXPECT_EQ(h.hex(), sha256_hex("abc", 3));
}

}  // namespace
}  // namespace zerodp
