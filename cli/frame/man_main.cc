// zerodp-man: writes zerodp's man page (man_page.h) to standard output. A build tool: the
// install rules make zerodp.1.gz with it (cmake/install.cmake); it is not installed.
#include <cstdio>

#include "app.h"
#include "man_page.h"

int main() {
  CLI::App app;
  zerodp::cli::build_app(app);
  std::fputs(zerodp::cli::man_page(app).c_str(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
