// bench_comm: bus bandwidth of all_reduce, reduce_scatter and all_gather — the threads
// backend, the MPI backend and OpenMPI's own MPI_Allreduce / MPI_Reduce_scatter_block /
// MPI_Allgather side by side, with the bound this machine's memory bandwidth sets.
//
//   build/bench/bench_comm                      everything: threads here, MPI under mpirun
//   build/bench/bench_comm --no-mpi             the threads backend and the bound only
//   build/bench/bench_comm --ranks 2 --sizes-mib 64
//
// On hosts joined by a shaped link (its RESULT lines are seconds per collective):
//   ZERODP=build/bench/bench_comm scripts/cluster.sh --hosts 2 --rate 200mbit --
//       --mpi-child --sizes-mib 1,4     (one command line)
//
// The MPI columns come from child runs of this program, `mpirun -np N ... bench_comm
// --mpi-child`, once with glibc's defaults and once with GLIBC_TUNABLES set to keep freed
// memory resident (the * columns): OpenMPI allocates reduction buffers per call, and a first
// touch of a page costs ~15 us on this kind of VM. Rank 0 of a child prints RESULT lines that
// the parent collects.
//
// Definitions (nccl-tests): S = bytes of the full buffer (count * 4, fp32), t = median over
// iterations of the slowest rank's time for one collective;
//   algbw = S / t;  busbw = algbw * 2(N-1)/N (all_reduce), * (N-1)/N (reduce_scatter,
//   all_gather). busbw is comparable across N and against the hardware.
// Bound: a ring all-reduce makes each rank add (N-1)/N of the buffer into its own (a += b)
// and copy (N-1)/N of it (memcpy); over all ranks (N-1) S of each, at the bandwidth
// min(N, cores) threads reach together. So busbw <= 2 / (N (1/B_add + 1/B_copy)) for
// all_reduce, B_add / N for reduce_scatter, B_copy / N for all_gather: the ring bound, what MPI
// implementations are held to.
// The threads backend runs no ring: it reads each input once and writes each output once, so
// its bound is that memory traffic at the rate this machine's streaming kernels move bytes:
// T = max(2 B_copy, 3 B_add) bytes a second (a memcpy of X reads X and writes X; a += b reads
// 2X and writes X; here a += b moves more). all_reduce reads N S and writes N S, t >= 2 N S / T;
// all_gather the same; reduce_scatter reads N S and writes S, t >= (N + 1) S / T. It can pass
// the ring bound and not this one — except from cache: the kernels are measured on 256 MiB,
// so a collective whose buffers stay in cache (1 and 16 MiB) can pass it too. The headline
// compares the threads backend with this bound, and the MPI backend with OpenMPI in the same
// layout (N processes).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"
#include "zerodp/common/shard.h"

#if defined(ZERODP_HAVE_MPI)
#include <mpi.h>
#endif

namespace {

using zerodp::DType;
using zerodp::comm::Collective;
using zerodp::comm::Communicator;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr const char* kTunables =
    "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967295:glibc.malloc.arena_max=1";
const Collective kCollectives[] = {Collective::all_reduce, Collective::reduce_scatter,
                                   Collective::all_gather};

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bus_factor(Collective c, int n) {
  return c == Collective::all_reduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
}

// When to stop timing: at least kMinIters, at most kMaxIters, and past kBudget seconds.
constexpr int kMinIters = 3, kMaxIters = 20, kWarmup = 1;
constexpr double kBudget = 1.0;
bool enough(const std::vector<double>& times) {
  double total = 0;
  for (double t : times) total += t;
  const int n = static_cast<int>(times.size());
  return n >= kMaxIters || (n >= kMinIters && total >= kBudget);
}

// ---- The machine: memcpy and a += b bandwidth with several threads. ----

struct Machine {
  std::map<int, double> copy_gbs, add_gbs;  // by thread count, GB/s of bytes copied / of b
};

template <class Fn>
double parallel_seconds(int threads, Fn&& fn) {
  std::vector<std::thread> pool;
  const auto start = Clock::now();
  for (int t = 1; t < threads; ++t) pool.emplace_back(fn, t);
  fn(0);
  for (auto& th : pool) th.join();
  return seconds(Clock::now() - start);
}

Machine measure_machine(int max_threads) {
  const std::size_t bytes = 256 * kMiB;
  const std::size_t count = bytes / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 2.0f);
  Machine m;
  for (int threads = 1; threads <= max_threads; ++threads) {
    std::vector<double> copy, add;
    for (int rep = 0; rep < 7; ++rep) {
      copy.push_back(parallel_seconds(threads, [&](int t) {
        const zerodp::Shard s = zerodp::shard_of(count, threads, t);
        std::memcpy(a.data() + s.offset, b.data() + s.offset, s.size * sizeof(float));
      }));
      add.push_back(parallel_seconds(threads, [&](int t) {
        const zerodp::Shard s = zerodp::shard_of(count, threads, t);
        float* __restrict x = a.data() + s.offset;
        const float* __restrict y = b.data() + s.offset;
        for (std::size_t i = 0; i < s.size; ++i) x[i] += y[i];
      }));
    }
    m.copy_gbs[threads] = bytes / median(copy) / 1e9;
    m.add_gbs[threads] = bytes / median(add) / 1e9;
  }
  return m;
}

double bound_busbw(const Machine& m, Collective c, int n, int cores) {
  const int threads = std::min(n, cores);
  const double add = m.add_gbs.at(threads), copy = m.copy_gbs.at(threads);
  switch (c) {
    case Collective::all_reduce:
      return 2.0 / (n * (1.0 / add + 1.0 / copy));
    case Collective::reduce_scatter:
      return add / n;
    default:
      return copy / n;
  }
}

// The threads backend's bound: its own memory traffic at memcpy's rate (see the top).
double threads_bound_busbw(const Machine& m, Collective c, int n, int cores) {
  const int threads = std::min(n, cores);
  const double traffic = std::max(2.0 * m.copy_gbs.at(threads), 3.0 * m.add_gbs.at(threads));
  const double algbw = c == Collective::reduce_scatter ? traffic / (n + 1) : traffic / (2.0 * n);
  return algbw * bus_factor(c, n);
}

// ---- Timing one collective on one communicator (threads or MPI backend). ----

// Buffers of one rank for one size, allocated and touched once, reused by every collective.
struct RankBuffers {
  std::vector<float> data, out, chunk;
  RankBuffers(std::size_t count, int n, int rank)
      : data(count, 1.0f + rank),
        out(count, 0.0f),
        chunk(zerodp::shard_of(count, n, rank).size, 1.0f) {}
};

void run_ours(Communicator& comm, Collective c, RankBuffers& b) {
  const std::size_t count = b.data.size();
  switch (c) {
    case Collective::all_reduce:
      comm.all_reduce(b.data.data(), count, DType::f32);
      break;
    case Collective::reduce_scatter:
      comm.reduce_scatter(b.data.data(), b.out.data(), count, DType::f32);
      break;
    default:
      comm.all_gather(b.chunk.data(), b.out.data(), count, DType::f32);
      break;
  }
}

// Median seconds of the slowest rank, for the threads backend with n ranks.
std::map<std::pair<Collective, std::size_t>, double> time_threads(
    int n, const std::vector<std::size_t>& sizes) {
  std::map<std::pair<Collective, std::size_t>, double> result;
  std::vector<std::vector<double>> per_rank(n, std::vector<double>(kWarmup + kMaxIters));
  zerodp::comm::run_thread_ranks(n, {}, [&](Communicator& comm) {
    const int r = comm.rank();
    for (std::size_t bytes : sizes) {
      RankBuffers b(bytes / sizeof(float), n, r);
      for (Collective c : kCollectives) {
        std::vector<double> times;
        for (int it = 0; !enough(times); ++it) {
          comm.barrier();
          const auto start = Clock::now();
          run_ours(comm, c, b);
          per_rank[r][it] = seconds(Clock::now() - start);
          comm.barrier();
          double slowest = 0;
          for (int q = 0; q < n; ++q) slowest = std::max(slowest, per_rank[q][it]);
          if (it >= kWarmup) times.push_back(slowest);
          comm.barrier();  // nobody overwrites per_rank before every rank has read it
        }
        if (r == 0) result[{c, bytes}] = median(times);
      }
    }
  });
  return result;
}

#if defined(ZERODP_HAVE_MPI)
// ---- Child: under mpirun, our MPI backend and OpenMPI's own collectives. ----

void run_openmpi(Collective c, RankBuffers& b, int n) {
  const int count = static_cast<int>(b.data.size());
  switch (c) {
    case Collective::all_reduce:
      MPI_Allreduce(b.data.data(), b.out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case Collective::reduce_scatter:
      MPI_Reduce_scatter_block(b.data.data(), b.out.data(), count / n, MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
      break;
    default:
      MPI_Allgather(b.chunk.data(), count / n, MPI_FLOAT, b.out.data(), count / n, MPI_FLOAT,
                    MPI_COMM_WORLD);
      break;
  }
}

int mpi_child(const std::vector<std::size_t>& sizes) {
  auto comm = zerodp::comm::make_mpi_communicator({});
  const int n = comm->size(), r = comm->rank();
  for (std::size_t bytes : sizes) {
    RankBuffers b(bytes / sizeof(float), n, r);
    for (const char* impl : {"zerodp-mpi", "openmpi"}) {
      for (Collective c : kCollectives) {
        std::vector<double> times;
        for (int it = 0; !enough(times); ++it) {
          MPI_Barrier(MPI_COMM_WORLD);
          const auto start = Clock::now();
          if (impl[0] == 'z') {
            run_ours(*comm, c, b);
          } else {
            run_openmpi(c, b, n);
          }
          double mine = seconds(Clock::now() - start), slowest = 0;
          MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (it >= kWarmup) times.push_back(slowest);
        }
        if (r == 0) {
          std::printf("RESULT %s %d %zu %.9f\n", impl, static_cast<int>(c), bytes, median(times));
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

// ---- Parent: runs the children and collects their RESULT lines. ----

using Results = std::map<std::string, std::map<std::pair<Collective, std::size_t>, double>>;

bool run_child(const std::string& mpirun, int n, bool tunables, const std::string& sizes_arg,
               Results& results) {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) return false;
  self[len] = '\0';
  std::string cmd = mpirun + " -np " + std::to_string(n) + " --oversubscribe --allow-run-as-root";
  if (tunables) cmd += std::string(" -x GLIBC_TUNABLES=") + kTunables;
  cmd += std::string(" ") + self + " --mpi-child --sizes-mib " + sizes_arg;
  std::fprintf(stderr, "bench_comm: %s\n", cmd.c_str());
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return false;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe)) {
    char impl[64];
    int c = 0;
    std::size_t bytes = 0;
    double t = 0;
    if (std::sscanf(line, "RESULT %63s %d %zu %lf", impl, &c, &bytes, &t) == 4) {
      results[std::string(impl) + (tunables ? "*" : "")][{static_cast<Collective>(c), bytes}] = t;
    }
  }
  return pclose(pipe) == 0;
}
#endif

// Share of the last 10 s some task waited for a CPU (Linux PSI), or -1: other load on the
// machine skews every figure here, so the table says how busy the machine was.
double cpu_pressure() {
  FILE* f = std::fopen("/proc/pressure/cpu", "r");
  if (!f) return -1;
  double avg10 = -1;
  if (std::fscanf(f, "some avg10=%lf", &avg10) != 1) avg10 = -1;
  std::fclose(f);
  return avg10;
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    const long x = std::strtol(p, &end, 10);
    if (end == p || x <= 0) throw zerodp::UsageError(std::string("bad list: ") + s);
    v.push_back(static_cast<int>(x));
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') throw zerodp::UsageError(std::string("bad list: ") + s);
  }
  return v;
}

std::string cell(double seconds, Collective c, int n, std::size_t bytes) {
  if (seconds <= 0) return "-";
  const double algbw = bytes / seconds / 1e9;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f (%.2f)", algbw * bus_factor(c, n), algbw);
  return buf;
}

struct Args {
  std::vector<int> ranks = {2, 4};
  std::vector<std::size_t> sizes;  // bytes
  std::string sizes_arg = "1,16,64,256";
  bool mpi = true, child = false;
  std::string mpirun;
};

Args parse_args(int argc, char** argv) {
  Args args;
#if defined(ZERODP_MPIEXEC)
  args.mpirun = ZERODP_MPIEXEC;
#endif
  std::vector<int> sizes_mib = {1, 16, 64, 256};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw zerodp::UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--ranks") {
      args.ranks = parse_list(value());
    } else if (a == "--sizes-mib") {
      args.sizes_arg = value();
      sizes_mib = parse_list(args.sizes_arg.c_str());
    } else if (a == "--no-mpi") {
      args.mpi = false;
    } else if (a == "--mpirun") {
      args.mpirun = value();
    } else if (a == "--mpi-child") {
      args.child = true;
    } else if (a == "--backend") {
      // scripts/cluster.sh runs its program with `--backend mpi`: a child is that already.
      if (std::string(value()) != "mpi") throw zerodp::UsageError("--backend: expected mpi");
    } else {
      throw zerodp::UsageError("unknown argument " + a +
                               " (accepted: --ranks 2,4 --sizes-mib 1,16,64,256 --no-mpi "
                               "--mpirun PATH)");
    }
  }
  for (int mib : sizes_mib) args.sizes.push_back(static_cast<std::size_t>(mib) * kMiB);
  return args;
}

// Seconds by rank count, implementation, collective and size.
using AllResults =
    std::map<int, std::map<std::string, std::map<std::pair<Collective, std::size_t>, double>>>;

AllResults measure_all(const Args& args) {
  AllResults all;
  for (int n : args.ranks) {
    std::fprintf(stderr, "bench_comm: threads backend, N = %d\n", n);
    all[n]["threads"] = time_threads(n, args.sizes);
  }
#if defined(ZERODP_HAVE_MPI)
  if (!args.mpi) return all;
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  for (int n : args.ranks) {
    for (bool tunables : {false, true}) {
      Results r;
      if (!run_child(args.mpirun, n, tunables, args.sizes_arg, r)) {
        std::fprintf(stderr, "bench_comm: the mpirun child for N = %d failed\n", n);
      }
      for (auto& [impl, times] : r) all[n][impl] = times;
    }
  }
#endif
  return all;
}

void print_machine(double pressure_before, int cores, const Machine& machine) {
  std::printf(
      "cpu pressure (PSI some avg10, %% of time a task waited for a core): %.0f at the "
      "start, %.0f at the end; other load skews every figure\n",
      pressure_before, cpu_pressure());
  std::printf("machine: %d cores; memcpy", cores);
  for (auto& [t, gbs] : machine.copy_gbs) std::printf(" %.1f GB/s (%d thr)", gbs, t);
  std::printf("; a += b");
  for (auto& [t, gbs] : machine.add_gbs) std::printf(" %.1f GB/s (%d thr)", gbs, t);
  std::printf("\n");
  std::printf(
      "cells: busbw (algbw) in GB/s, median over iterations of the slowest rank; "
      "* = GLIBC_TUNABLES=%s\n",
      kTunables);
}

const std::vector<std::string> kImpls = {"threads", "zerodp-mpi", "zerodp-mpi*", "openmpi",
                                         "openmpi*"};

void print_table(const AllResults& all, int n, const std::vector<std::size_t>& sizes,
                 const Machine& machine, int cores) {
  std::printf("\nN = %d\n%-15s %7s", n, "collective", "size");
  for (const auto& impl : kImpls) std::printf(" %15s", impl.c_str());
  std::printf(" %15s %15s\n", "ring bound", "threads bound");
  for (Collective c : kCollectives) {
    for (std::size_t bytes : sizes) {
      std::printf("%-15s %3zu MiB", std::string(zerodp::comm::collective_name(c)).c_str(),
                  bytes / kMiB);
      for (const auto& impl : kImpls) {
        double seconds = 0;
        if (auto at_n = all.find(n); at_n != all.end()) {
          if (auto m = at_n->second.find(impl); m != at_n->second.end()) {
            if (auto it = m->second.find({c, bytes}); it != m->second.end()) seconds = it->second;
          }
        }
        std::printf(" %15s", cell(seconds, c, n, bytes).c_str());
      }
      std::printf(" %15.2f %15.2f\n", bound_busbw(machine, c, n, cores),
                  threads_bound_busbw(machine, c, n, cores));
    }
  }
}

// The headline, like with like: the threads backend against its own memory-traffic bound, and
// the MPI backend against OpenMPI in the same layout (N processes), best of each's two runs;
// then every cell where OpenMPI is faster.
void print_goal(const AllResults& all, int n, const std::vector<std::size_t>& sizes,
                const Machine& machine, int cores) {
  auto busbw = [&](const std::string& impl, Collective c, std::size_t bytes) {
    const auto at_n = all.find(n);
    if (at_n == all.end()) return 0.0;
    const auto m = at_n->second.find(impl);
    if (m == at_n->second.end()) return 0.0;
    const auto it = m->second.find({c, bytes});
    return it == m->second.end() ? 0.0 : double(bytes) / it->second / 1e9 * bus_factor(c, n);
  };
  auto best = [&](const char* a, const char* b, Collective c, std::size_t bytes) {
    return std::max(busbw(a, c, bytes), busbw(b, c, bytes));
  };
  for (std::size_t bytes : sizes) {
    const double threads = busbw("threads", Collective::all_reduce, bytes);
    if (threads <= 0) continue;
    std::printf("all_reduce %zu MiB, N = %d: threads %.2f GB/s busbw = %.0f%% of its bound (%.2f)",
                bytes / kMiB, n, threads,
                100.0 * threads / threads_bound_busbw(machine, Collective::all_reduce, n, cores),
                threads_bound_busbw(machine, Collective::all_reduce, n, cores));
    const double ours = best("zerodp-mpi", "zerodp-mpi*", Collective::all_reduce, bytes);
    const double theirs = best("openmpi", "openmpi*", Collective::all_reduce, bytes);
    if (ours > 0 && theirs > 0) {
      std::printf("; MPI backend %.2f vs OpenMPI %.2f, %.2fx (%d processes each)", ours, theirs,
                  ours / theirs, n);
    }
    std::printf("\n");
  }
  for (Collective c : kCollectives) {
    for (std::size_t bytes : sizes) {
      const double ours = best("zerodp-mpi", "zerodp-mpi*", c, bytes);
      const double theirs = best("openmpi", "openmpi*", c, bytes);
      if (ours > 0 && theirs > ours) {
        std::printf("OpenMPI is faster: %s %zu MiB, N = %d: %.2f vs %.2f GB/s busbw\n",
                    std::string(zerodp::comm::collective_name(c)).c_str(), bytes / kMiB, n, theirs,
                    ours);
      }
    }
  }
}

int run(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
#if defined(ZERODP_HAVE_MPI)
  if (args.child) return mpi_child(args.sizes);
#else
  if (args.child) throw zerodp::Error("built without MPI");
#endif
  const double pressure_before = cpu_pressure();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::fprintf(stderr, "bench_comm: measuring memcpy and a += b on 1..%d threads\n", cores);
  const Machine machine = measure_machine(cores);
  const AllResults all = measure_all(args);
  print_machine(pressure_before, cores, machine);
  for (int n : args.ranks) {
    print_table(all, n, args.sizes, machine, cores);
    print_goal(all, n, args.sizes, machine, cores);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const zerodp::UsageError& e) {
    std::fprintf(stderr, "bench_comm: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_comm: error: %s\n", e.what());
    return 1;
  }
}
