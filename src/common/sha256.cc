#include "zerodp/common/sha256.h"

#include <openssl/evp.h>

#include "zerodp/common/error.h"

namespace zerodp {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  ZERODP_CHECK(ctx_ != nullptr);
  ZERODP_CHECK(EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}

void Sha256::update(const void* data, std::size_t bytes) {
  ZERODP_CHECK(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, bytes) == 1);
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  ZERODP_CHECK(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest, &length) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(const void* data, std::size_t bytes) {
  Sha256 h;
  h.update(data, bytes);
  return h.hex();
}

}  // namespace zerodp
