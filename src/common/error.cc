#include "zerodp/error.h"

#include <cstdio>
#include <cstdlib>

namespace zerodp {

void check_failed(const char* condition, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "zerodp: internal check failed at %s:%d: %s%s%s\n", file, line, condition,
               detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

}  // namespace zerodp
