// SHA-256 of bytes, as lowercase hex, through OpenSSL's libcrypto: checksums of weights and
// checkpoint shards that any other tool (sha256sum, hashlib) reproduces.
#pragma once

#include <cstddef>
#include <string>

namespace zerodp {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, std::size_t bytes);
  std::string hex();  // finishes the digest

 private:
  void* ctx_;
};

std::string sha256_hex(const void* data, std::size_t bytes);

}  // namespace zerodp
