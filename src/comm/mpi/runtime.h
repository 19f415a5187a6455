// Runtime: MPI for this process — initialised on first use on the process's one MPI progress
// thread, which then makes every MPI call of every MPI communicator, and finalised on that
// same thread at exit (as MPI requires of the thread that initialised it).
//
// If the program initialised MPI itself, the runtime uses it as it is (it needs
// MPI_THREAD_SERIALIZED or more, since the calls come from the progress thread) and leaves
// finalising to the program.
//
// When it initialises MPI, it sets SIGPIPE to be ignored (unless the program handles SIGPIPE
// itself), so a rank that writes to a dead peer gets an error instead of being ended by the signal.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/work.h"

namespace zerodp::comm::mpi {

class Runtime {
 public:
  // The process's runtime, started on first call. Throws Error if MPI cannot be initialised.
  static Runtime& get();

  ProgressThread& progress() { return *progress_; }

  // Called on the progress thread whenever it wakes between works (MPI communicators send
  // their abort notices from there).
  void add_wake_hook(const void* owner, std::function<void()> hook);
  void remove_wake_hook(const void* owner);

  ~Runtime();

 private:
  Runtime();
  void on_wake();

  std::mutex mu_;
  std::vector<std::pair<const void*, std::function<void()>>> hooks_;  // guarded by mu_
  bool finalize_ = false;                                             // progress thread only
  std::unique_ptr<ProgressThread> progress_;
};

}  // namespace zerodp::comm::mpi
