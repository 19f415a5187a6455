// main() of the MPI test binaries: every rank runs every test; rank 0 prints the usual
// report, the other ranks only their failures, prefixed with their rank. MPI is initialised
// by the backend on first use and finalised at exit.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "zerodp/comm/communicator.h"

namespace {

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Starts MPI (and the backend's progress thread) before any test runs.
  const int rank = zerodp::comm::make_mpi_communicator({})->rank();
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  return RUN_ALL_TESTS();
}
