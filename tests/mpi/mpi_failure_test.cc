// Failures of the MPI backend under mpirun: a missing rank, an aborting rank and mismatched
// calls end in errors on every rank, with the messages of the threads backend; a write to a
// dead peer is an error, not a SIGPIPE that ends the writer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <string>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"

namespace zerodp::comm {
namespace {

using ::testing::HasSubstr;

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::unique_ptr<Communicator> make(std::chrono::milliseconds timeout) {
  Options options;
  options.timeout = timeout;
  return make_mpi_communicator(options);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The last rank stays away from all_reduce #2 until the others have given up; they time out
// naming it, and its late call fails at once with their reason.
TEST(MpiFailure, MissingRankTimesOutOnEveryRank) {
  auto comm = make(std::chrono::milliseconds(500));
  const int n = comm->size();
  const int r = comm->rank();
  const int late = n - 1;
  std::vector<float> data(10, 1.0f);
  comm->all_reduce(data.data(), 10, DType::f32);
  const std::string expected = "all_reduce #2 (10 x fp32) timed out after 500 ms: rank " +
                               std::to_string(late) + " did not arrive";
  int token = 0;
  if (r == late) {
    for (int j = 0; j < late; ++j) {
      MPI_Recv(&token, 1, MPI_INT, j, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::string msg = error_of([&] { comm->all_reduce(data.data(), 10, DType::f32); });
    EXPECT_LT(seconds_since(start), 0.45) << "the late rank must not wait out a timeout";
    EXPECT_THAT(msg, HasSubstr("all_reduce #2 (10 x fp32) failed on rank " + std::to_string(late) +
                               ": " + expected));
  } else {
    const std::string msg = error_of([&] { comm->all_reduce(data.data(), 10, DType::f32); });
    MPI_Send(&token, 1, MPI_INT, late, 78, MPI_COMM_WORLD);
    EXPECT_THAT(msg, HasSubstr("failed on rank " + std::to_string(r) + ": " + expected));
    EXPECT_EQ(data[0], static_cast<float>(n)) << "the failed collective left the data alone";
  }
  EXPECT_THAT(error_of([&] { comm->barrier(); }), HasSubstr(expected));
  MPI_Barrier(MPI_COMM_WORLD);
}

// A pipe whose reader is closed stands in for a TCP connection whose peer process was killed:
// the kernel answers a write to either with SIGPIPE. Before MPI ignored it, a surviving rank's
// transport could be ended by that signal and mpirun reported the survivor, not the killed rank.
TEST(MpiFailure, AWriteToADeadPeerFailsInsteadOfEndingTheRank) {
  auto comm = make(std::chrono::seconds(60));  // the backend has initialised MPI
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  int ends[2];
  ASSERT_EQ(pipe(ends), 0);
  close(ends[0]);
  const char byte = 1;
  errno = 0;
  EXPECT_EQ(write(ends[1], &byte, 1), -1);  // with SIGPIPE's default action, the test ends here
  EXPECT_EQ(errno, EPIPE);
  close(ends[1]);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiFailure, AbortingRankFailsEveryPeerWithItsReason) {
  auto comm = make(std::chrono::seconds(60));
  const int r = comm->rank();
  std::vector<float> data(10, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  if (r == 1) comm->abort("boom in backward");
  const std::string msg = error_of([&] { comm->all_reduce(data.data(), 10, DType::f32); });
  EXPECT_THAT(msg, HasSubstr("all_reduce #1 (10 x fp32) failed on rank " + std::to_string(r) +
                             ": rank 1 aborted: boom in backward"));
  EXPECT_LT(seconds_since(start), 30.0) << "peers must fail at once, not at the timeout";
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiFailure, MismatchedCallsAreReportedOnEveryRank) {
  auto comm = make(std::chrono::seconds(60));
  const int r = comm->rank();
  std::vector<float> data(12, 1.0f);
  const std::string msg =
      error_of([&] { comm->all_reduce(data.data(), r == 2 ? 11 : 12, DType::f32); });
  EXPECT_THAT(msg, HasSubstr("collectives do not match: rank 0 called all_reduce #1 (12 x "
                             "fp32) but rank 2 called all_reduce #1 (11 x fp32)"));
  EXPECT_EQ(data, std::vector<float>(12, 1.0f));
  std::vector<float> kind_data(12, 1.0f), out(12);
  auto fresh = make(std::chrono::seconds(60));
  const std::string kind = error_of([&] {
    if (r == 0) {
      fresh->barrier();
    } else {
      fresh->all_gather(kind_data.data(), out.data(), 12, DType::f32);
    }
  });
  EXPECT_THAT(kind, HasSubstr("rank 0 called barrier #1 but rank 1 called all_gather #1"));
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace zerodp::comm
