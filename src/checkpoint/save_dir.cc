// SaveDir: one run per save dir. The claim takes the folder's lock, refuses another run's
// checkpoints, sets aside what a rewinding run supersedes, and registers the run's id for
// save() in this process.
#include "checkpoint/save_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <system_error>
#include <utility>

#include "checkpoint/format.h"
#include "checkpoint/manifest.h"
#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"

namespace zerodp::checkpoint {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLockFile = ".zerodp-lock";

// One name per folder however it is spelled ("d", "./d/", a symbolic link to it).
std::string folder_key(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  std::string key = p.lexically_normal().string();
  while (key.size() > 1 && key.back() == '/') key.pop_back();
  return key;
}

// The claims this process holds: save() looks its run up here by folder.
std::mutex g_claims_mu;
std::map<std::string, Ownership>& claims() {
  static std::map<std::string, Ownership> map;
  return map;
}

std::string new_run_id() {
  std::random_device random;  // the kernel's entropy: independent across hosts and restarts
  char hex[33];
  for (int i = 0; i < 4; ++i) std::snprintf(hex + 8 * i, 9, "%08x", unsigned(random()));
  return hex;
}

// A save folder is a folder of its own: never inside a checkpoint (the run that owns it
// removes that folder whole with --keep) nor inside another run's save folder.
void refuse_nested(const std::string& dir) {
  if (const auto folder = checkpoint_containing(dir)) {
    throw InvalidArgument(field_ref("save_dir") + ": " + quote(dir) + " is inside the checkpoint " +
                          quote(*folder) + "; give a folder of its own");
  }
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec).lexically_normal();
  for (fs::path up = p.parent_path(); !up.empty(); up = up.parent_path()) {
    if (fs::exists(up / kLockFile, ec)) {
      throw InvalidArgument(field_ref("save_dir") + ": " + quote(dir) +
                            " is inside the save folder " + quote(up.string()) +
                            " of another run; give a folder of its own");
    }
    if (up == up.root_path()) break;
  }
}

void make_folder(const std::string& dir) {
  if (dir.empty())
    throw InvalidArgument(field_ref("save_dir") +
                          ": expected a folder to save checkpoints in, got ''");
  refuse_nested(dir);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw InvalidArgument(
        field_ref("save_dir") + ": " + quote(dir) +
        " is not a folder (a file is in the way); give a folder to save checkpoints in");
  }
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) {
    throw InvalidArgument(field_ref("save_dir") + ": cannot create the folder " + quote(dir) +
                          ": " + ec.message());
  }
}

// What a lock file says of its holder, printable and on one line.
std::string holder_of(int fd) {
  char buf[256] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text;
  for (ssize_t i = 0; i < n; ++i) text += (buf[i] >= 0x20 && buf[i] < 0x7f) ? buf[i] : '?';
  return text.empty() ? "a run that has not said who it is yet" : text;
}

// Takes SAVE_DIR/.zerodp-lock for as long as the returned descriptor stays open, and writes who
// holds it. The kernel releases the lock when the process ends, however it ends.
int take_lock(const std::string& dir) {
  const std::string path = (fs::path(dir) / kLockFile).string();
  // O_NOFOLLOW: a lock file that is a planted link is refused, not written through; and it is
  // truncated below only once it is known to be a regular file of one name, not a hard link to
  // someone's file.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || ::access(dir.c_str(), W_OK) != 0) {
    const std::string why = errno == ELOOP
                                ? "its " + std::string(kLockFile) + " is a symbolic link; remove it"
                                : errno_text();
    if (fd >= 0) ::close(fd);
    throw InvalidArgument(field_ref("save_dir") + ": cannot write in " + quote(dir) + ": " + why);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    ::close(fd);
    throw InvalidArgument(field_ref("save_dir") + ": " + quote(path) +
                          " is not a lock file of zerodp's (not a regular file of one name); "
                          "remove it");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const bool busy = errno == EWOULDBLOCK;
    const std::string why = busy ? holder_of(fd) : errno_text();
    ::close(fd);
    if (busy) {
      throw InvalidArgument(field_ref("save_dir") + ": " + quote(dir) +
                            " is being written by another run (" + why +
                            "); wait for it to end or pick another folder");
    }
    throw InvalidArgument(field_ref("save_dir") + ": cannot lock " + quote(path) + ": " + why);
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string who = "pid " + std::to_string(::getpid()) + " on " + host;
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, who.data(), who.size(), 0) < 0) {
    // The holder's name is only for messages: the lock itself is held.
  }
  return fd;
}

std::int64_t step_of(const fs::path& folder) {
  return std::strtoll(folder.filename().string().c_str() + 5, nullptr, 10);  // "step-"
}

void refuse_foreign(const std::string& dir, const Saved& theirs, bool resuming) {
  const std::string name = theirs.folder.filename().string();
  throw InvalidArgument(
      field_ref("save_dir") + ": " + quote(dir) + " holds checkpoints of another run (" + name +
      (resuming ? ") than the one " + field_ref("resume") + " names" : ")") + "; " +
      field_ref("resume") + " " + quote(dir) + " to continue that run, or pick another folder");
}

// SAVE_DIR/superseded-20261130-101502, or with -2, -3 ... when that exists already.
fs::path aside_folder(const std::string& dir) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "superseded-%Y%m%d-%H%M%S", &utc);
  fs::path aside = fs::path(dir) / stamp;
  for (int i = 2; fs::exists(aside); ++i) {
    char numbered[48];
    std::snprintf(numbered, sizeof numbered, "%s-%d", stamp, i);
    aside = fs::path(dir) / numbered;
  }
  return aside;
}

// Moves this run's checkpoints later than `step` aside (a rename each: whole folders, nothing
// copied or deleted) and returns the line that says so, or "" when there are none.
std::string set_aside_later(const std::string& dir, const std::vector<Saved>& saved,
                            std::int64_t step) {
  std::vector<fs::path> later;
  for (const Saved& s : saved)
    if (step_of(s.folder) > step) later.push_back(s.folder);
  if (later.empty()) return {};
  const fs::path aside = aside_folder(dir);
  std::error_code ec;
  fs::create_directory(aside, ec);
  for (const fs::path& f : later) {
    fs::rename(f, aside / f.filename(), ec);
    if (ec) throw Error("cannot move " + quote(f.string()) + " aside: " + ec.message());
  }
  fsync_dir(aside.string());
  fsync_dir(dir);
  return "rewound to step " + std::to_string(step) + ": moved " + std::to_string(later.size()) +
         " later checkpoint(s) of this run (" + later.front().filename().string() +
         (later.size() > 1 ? " to " + later.back().filename().string() : std::string()) + ") to " +
         quote(aside.string());
}

}  // namespace

std::vector<Saved> complete_checkpoints(const std::string& save_dir) {
  std::vector<Saved> saved;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(save_dir, ec)) {
    if (is_complete(entry.path())) saved.push_back({entry.path(), run_id_of(entry.path())});
  }
  // step-%08lld names: the oldest sorts first.
  std::sort(saved.begin(), saved.end(),
            [](const Saved& a, const Saved& b) { return a.folder < b.folder; });
  return saved;
}

Ownership claimed(const std::string& save_dir) {
  std::lock_guard<std::mutex> lock(g_claims_mu);
  const auto it = claims().find(folder_key(save_dir));
  ZERODP_CHECK_MSG(it != claims().end(),
                   "checkpoint::save into " + save_dir + " without a SaveDir claim of it");
  return it->second;
}

struct SaveDir::Impl {
  std::string path, key;
  std::optional<std::int64_t> rewind_to;  // the resumed step, until set_aside_superseded()
  Ownership owner;
  int lock_fd = -1;
  ~Impl() {
    if (lock_fd < 0) return;
    {
      std::lock_guard<std::mutex> lock(g_claims_mu);
      claims().erase(key);
    }
    ::close(lock_fd);  // releases the lock
  }
};

SaveDir::SaveDir(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SaveDir::~SaveDir() = default;
SaveDir::SaveDir(SaveDir&&) noexcept = default;
SaveDir& SaveDir::operator=(SaveDir&&) noexcept = default;

SaveDir SaveDir::claim(const std::string& save_dir, const Checkpoint* resumed) {
  make_folder(save_dir);
  auto impl = std::make_unique<Impl>();
  impl->path = save_dir;
  impl->key = folder_key(save_dir);
  impl->lock_fd = take_lock(save_dir);  // released by ~Impl if anything below throws
  const std::vector<Saved> saved = complete_checkpoints(save_dir);
  const std::string resumed_id = resumed ? resumed->manifest().run_id : std::string();
  for (auto s = saved.rbegin(); s != saved.rend(); ++s) {  // the newest is named
    if (!resumed || s->run_id != resumed_id) refuse_foreign(save_dir, *s, resumed != nullptr);
  }
  impl->owner = {resumed_id.empty() ? new_run_id() : resumed_id, resumed && resumed_id.empty()};
  if (resumed) impl->rewind_to = resumed->state().run_step;
  std::lock_guard<std::mutex> lock(g_claims_mu);
  // flock refuses a second claim of one folder in this process too: the key is free.
  claims()[impl->key] = impl->owner;
  return SaveDir(std::move(impl));
}

const std::string& SaveDir::path() const {
  return impl_->path;
}
const std::string& SaveDir::run_id() const {
  return impl_->owner.run_id;
}
std::string SaveDir::set_aside_superseded() {
  if (!impl_->rewind_to) return {};
  const std::int64_t step = *impl_->rewind_to;
  impl_->rewind_to.reset();
  return set_aside_later(impl_->path, complete_checkpoints(impl_->path), step);
}

}  // namespace zerodp::checkpoint
