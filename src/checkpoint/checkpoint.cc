#include "zerodp/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/sha256.h"
#include "zerodp/error.h"

namespace zerodp::checkpoint {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'Z', 'E', 'R', 'O', 'D', 'P', 'S', 'H'};
constexpr std::size_t kHeaderBytes = 64;
constexpr const char* kManifest = "manifest.json";

std::string errno_text() {
  return std::strerror(errno);
}

std::string shard_name(int rank, int ranks) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d-of-%05d.bin", rank, ranks);
  return buf;
}

std::string step_folder(const std::string& save_dir, std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return (fs::path(save_dir) / buf).string();
}

// A file written under a temporary name, fsynced and renamed into place: it is there whole
// or not at all.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot create " + tmp_ + ": " + errno_text());
  }
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_), ::unlink(tmp_.c_str());
  }
  void write(const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, p, bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error("cannot write " + tmp_ + ": " + errno_text());
      p += n, bytes -= static_cast<std::size_t>(n);
    }
    hash_.update(data, static_cast<std::size_t>(p - static_cast<const char*>(data)));
  }
  // Returns the file's SHA-256.
  std::string commit() {
    if (::fsync(fd_) != 0) throw Error("cannot fsync " + tmp_ + ": " + errno_text());
    if (::close(fd_) != 0) {
      fd_ = -1;
      throw Error("cannot close " + tmp_ + ": " + errno_text());
    }
    fd_ = -1;
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      throw Error("cannot rename " + tmp_ + " to " + path_ + ": " + errno_text());
    }
    return hash_.hex();
  }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  Sha256 hash_;
};

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) ::fsync(fd), ::close(fd);
}

std::string write_shard(const std::string& path, Engine& engine, int rank, int ranks,
                        std::uint64_t elements) {
  std::vector<float> master(elements), m(elements), v(elements);
  engine.export_owned(master, m, v);
  unsigned char header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, 8);
  const std::uint32_t fields[3] = {kFormatVersion, std::uint32_t(rank), std::uint32_t(ranks)};
  std::memcpy(header + 8, fields, sizeof fields);
  std::memcpy(header + 24, &elements, 8);
  AtomicFile file(path);
  file.write(header, kHeaderBytes);
  for (const auto* block : {&master, &m, &v}) file.write(block->data(), elements * sizeof(float));
  return file.commit();
}

// Collective: true on every rank when every rank's `ok` is true.
bool all_ok(comm::Communicator& comm, bool ok) {
  float flag = ok ? 0.0f : 1.0f;
  comm.all_reduce(&flag, 1, DType::f32);
  return flag == 0.0f;
}

std::string sha256_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  Sha256 hash;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    hash.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  return hash.hex();
}

// A shard's header must be the one save_checkpoint() wrote for shard `index` of `count`: a
// shard copied in from another checkpoint is named, not read.
void check_header(int fd, const std::string& file, std::size_t index, std::size_t count,
                  std::uint64_t elements) {
  unsigned char header[kHeaderBytes];
  if (::pread(fd, header, kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes))
    throw Error("cannot read the header of " + file + ": " + errno_text());
  std::uint32_t fields[3];
  std::uint64_t stored;
  std::memcpy(fields, header + 8, sizeof fields);
  std::memcpy(&stored, header + 24, 8);
  if (std::memcmp(header, kMagic, 8) != 0 || fields[0] != kFormatVersion || fields[1] != index ||
      fields[2] != count || stored != elements) {
    throw Error("shard " + file + ": its header is not that of shard " + std::to_string(index) +
                " of " + std::to_string(count) + " with " + std::to_string(elements) + " elements");
  }
}

// The text of a JSON object the caller made; anything else is a bug of the caller.
nlohmann::json parse_object(const std::string& text, const char* what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ZERODP_CHECK_MSG(j.is_object(), std::string(what) + " is not the text of a JSON object");
  return j;
}

}  // namespace

std::string save(const std::string& save_dir, Engine& engine, comm::Communicator& comm,
                 const std::string& model_config, const std::string& run_record, int keep) {
  ZERODP_CHECK(keep >= 1);
  const nlohmann::json model = parse_object(model_config, "the model config");
  const nlohmann::json run = parse_object(run_record, "the run record");
  const int rank = comm.rank(), ranks = comm.size();
  const EngineState state = engine.state();
  const std::string folder = step_folder(save_dir, state.step);
  const std::vector<FlatRange> ranges = engine.owned_ranges();
  std::uint64_t elements = 0;
  for (const FlatRange& r : ranges) elements += r.count;

  // 1. Every rank writes its shard; nobody goes on unless all did.
  std::string sha, failure;
  try {
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (!fs::is_directory(folder)) throw Error("cannot create " + folder + ": " + ec.message());
    sha = write_shard((fs::path(folder) / shard_name(rank, ranks)).string(), engine, rank, ranks,
                      elements);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(comm, failure.empty())) {
    throw Error(failure.empty() ? "checkpoint " + folder + " failed on another rank" : failure);
  }

  // 2. Rank 0 learns every shard's hash and ranges (fixed-size words, so all_gather fits).
  std::vector<std::uint64_t> words(5 + 2 * ranges.size());
  words[0] = elements;
  for (int i = 0; i < 4; ++i) words[1 + i] = std::stoull(sha.substr(16 * i, 16), nullptr, 16);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    words[5 + 2 * i] = ranges[i].offset;
    words[6 + 2 * i] = ranges[i].count;
  }
  std::vector<std::uint64_t> all(words.size() * ranks);
  comm.all_gather(words.data(), all.data(), words.size() * 4 * ranks, DType::bf16);

  // Fault injection for tests: die by SIGKILL with every shard written and no manifest yet,
  // the worst moment for a save to be interrupted.
  if (const char* at = std::getenv("ZERODP_INJECT_KILL_BEFORE_MANIFEST")) {
    if (std::strtoll(at, nullptr, 10) == state.step) ::raise(SIGKILL);
  }

  // 3. Rank 0 writes the manifest last; then the checkpoint exists.
  failure.clear();
  if (rank == 0) {
    try {
      nlohmann::json shards = nlohmann::json::array();
      std::uint64_t total = 0;
      for (int r = 0; r < ranks; ++r) {
        const std::uint64_t* w = all.data() + r * words.size();
        char hex[65];
        std::snprintf(hex, sizeof hex, "%016llx%016llx%016llx%016llx", (unsigned long long)w[1],
                      (unsigned long long)w[2], (unsigned long long)w[3], (unsigned long long)w[4]);
        nlohmann::json rs = nlohmann::json::array();
        for (std::size_t i = 0; i < ranges.size(); ++i) {
          if (w[6 + 2 * i] > 0) rs.push_back({w[5 + 2 * i], w[6 + 2 * i]});
          total += w[6 + 2 * i];
        }
        shards.push_back({{"file", shard_name(r, ranks)},
                          {"bytes", kHeaderBytes + 12 * w[0]},
                          {"elements", w[0]},
                          {"sha256", hex},
                          {"ranges", rs}});
      }
      const EngineOptions& o = engine.options();
      const nlohmann::json manifest = {{"format", "zerodp-checkpoint"},
                                       {"version", kFormatVersion},
                                       {"model", model},
                                       {"params", total},
                                       {"stage", o.stage},
                                       {"ranks", ranks},
                                       {"precision", std::string(dtype_name(o.precision))},
                                       {"bucket_bytes", o.bucket_bytes},
                                       {"state",
                                        {{"step", state.step},
                                         {"samples_done", state.samples_done},
                                         {"loss_scale", state.loss_scale},
                                         {"good_steps", state.good_steps}}},
                                       {"run", run},
                                       {"shards", shards}};
      AtomicFile file((fs::path(folder) / kManifest).string());
      const std::string text = manifest.dump(2) + "\n";
      file.write(text.data(), text.size());
      file.commit();
      fsync_dir(folder);
      fsync_dir(save_dir);
      // Only now may older checkpoints go.
      std::vector<fs::path> complete;
      for (const auto& entry : fs::directory_iterator(save_dir)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("step-", 0) == 0 && fs::exists(entry.path() / kManifest)) {
          complete.push_back(entry.path());
        }
      }
      std::sort(complete.begin(), complete.end());
      for (std::size_t i = 0; i + keep < complete.size(); ++i) {
        std::error_code ec;
        fs::remove(complete[i] / kManifest, ec);  // first: a half-removed folder is ignored
        fs::remove_all(complete[i], ec);
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!all_ok(comm, failure.empty())) {
    throw Error(failure.empty() ? "checkpoint " + folder + " failed on rank 0" : failure);
  }
  return folder;
}

std::optional<std::string> latest(const std::string& save_dir) {
  std::error_code ec;
  if (!fs::is_directory(save_dir, ec)) return std::nullopt;
  std::optional<std::string> best;
  for (const auto& entry : fs::directory_iterator(save_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || !fs::exists(entry.path() / kManifest)) continue;
    if (!best || entry.path().string() > *best) best = entry.path().string();
  }
  return best;
}

struct Checkpoint::Impl {
  std::string folder;
  Manifest manifest;
  nlohmann::json model;  // manifest.model, parsed, for check_model()
  struct Entry {
    std::uint64_t offset, count;  // in the flat layout
    int shard;
    std::uint64_t local;  // element index in the shard's blocks
  };
  std::vector<Entry> index;  // sorted by offset
  std::vector<int> fds;
  std::vector<std::uint64_t> elements;
  std::vector<std::string> files;

  ~Impl() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

Checkpoint::Checkpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Checkpoint::~Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;

Checkpoint Checkpoint::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  std::error_code ec;
  if (fs::exists(fs::path(path) / kManifest, ec)) {
    impl->folder = path;
  } else if (auto newest = latest(path)) {
    impl->folder = *newest;
  } else {
    throw Error("no complete checkpoint in " + path +
                " (no manifest.json in it or in a step-* "
                "folder under it)");
  }
  const std::string manifest_path = (fs::path(impl->folder) / kManifest).string();
  std::ifstream in(manifest_path);
  if (!in) throw Error("cannot read " + manifest_path);
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(manifest_path + " is not valid JSON: " + e.what());
  }
  try {
    if (!m.is_object() || m.at("format") != "zerodp-checkpoint")
      throw Error("not a zerodp checkpoint manifest");
    if (m.at("version") != kFormatVersion) {
      throw Error("format version " + m.at("version").dump() + ", this zerodp reads version " +
                  std::to_string(kFormatVersion));
    }
    if (!m.at("model").is_object()) throw Error("\"model\" is not an object");
    // The engine state is read and checked here, once, so that state() cannot fail later.
    const auto& state = m.at("state");
    const auto step = state.at("step").get<std::int64_t>();
    const auto loss_scale = state.at("loss_scale").get<double>();
    const auto good_steps = state.at("good_steps").get<std::int64_t>();
    if (step < 0) throw Error("state.step is negative");
    if (!(loss_scale > 0) || !std::isfinite(static_cast<float>(loss_scale)))
      throw Error("state.loss_scale is not a positive finite fp32");
    if (good_steps < 0 || good_steps > std::numeric_limits<int>::max())
      throw Error("state.good_steps is out of range");
    impl->manifest.state = {step, state.at("samples_done").get<std::uint64_t>(),
                            static_cast<float>(loss_scale), static_cast<int>(good_steps)};

    const auto& shards = m.at("shards");
    if (!shards.is_array() || shards.empty()) throw Error("\"shards\" is not a list of shards");
    if (m.at("ranks") != shards.size()) throw Error("\"ranks\" is not the number of shards");
    // Offsets and counts are checked against these bounds before any sum, so no sum wraps.
    constexpr std::uint64_t kMaxElements = (std::uint64_t{1} << 60) / 12;
    constexpr std::uint64_t kMaxFlat = std::uint64_t{1} << 62;
    std::uint64_t covered = 0;
    for (std::size_t s = 0; s < shards.size(); ++s) {
      const std::string name = shards[s].at("file").get<std::string>();
      // Shards live in the checkpoint's folder: a name is a plain file name, never a path.
      const bool plain = !name.empty() && name != "." && name != ".." &&
                         name.find_first_not_of(
                             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789._-") == std::string::npos;
      if (!plain) throw Error("shard file " + quote(name) + " is not a plain file name");
      const std::string file = (fs::path(impl->folder) / name).string();
      const auto bytes = shards[s].at("bytes").get<std::uint64_t>();
      const auto elements = shards[s].at("elements").get<std::uint64_t>();
      if (elements > kMaxElements) throw Error("shard " + file + ": too many elements");
      if (!fs::is_regular_file(file)) throw Error("shard " + file + " is missing");
      const std::uint64_t size = fs::file_size(file);
      if (size != bytes || bytes != kHeaderBytes + 12 * elements) {
        throw Error("shard " + file + " is " + std::to_string(size) + " bytes, the manifest says " +
                    std::to_string(bytes) + " (truncated or replaced)");
      }
      if (sha256_of_file(file) != shards[s].at("sha256").get<std::string>()) {
        throw Error("shard " + file + " does not match its SHA-256 in the manifest (corrupted)");
      }
      const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw Error("cannot open " + file + ": " + errno_text());
      impl->fds.push_back(fd);
      impl->files.push_back(file);
      impl->elements.push_back(elements);
      check_header(fd, file, s, shards.size(), elements);
      std::uint64_t local = 0;
      for (const auto& r : shards[s].at("ranges")) {
        const auto offset = r.at(0).get<std::uint64_t>(), count = r.at(1).get<std::uint64_t>();
        if (count > elements - local || offset > kMaxFlat || count > kMaxFlat - offset ||
            covered > kMaxFlat - count)
          throw Error("shard " + file + ": a range beyond its elements or the model");
        impl->index.push_back({offset, count, static_cast<int>(s), local});
        local += count;
        covered += count;
      }
      if (local != elements)
        throw Error("shard " + file + ": its ranges do not add up to its size");
    }
    std::sort(impl->index.begin(), impl->index.end(),
              [](const auto& a, const auto& b) { return a.offset < b.offset; });
    std::uint64_t next = 0;
    for (const auto& e : impl->index) {
      if (e.offset != next)
        throw Error("the shards' ranges leave a gap or overlap at " + std::to_string(next));
      next += e.count;
    }
    if (covered != m.at("params").get<std::uint64_t>()) {
      throw Error("the shards hold " + std::to_string(covered) + " parameters, the manifest says " +
                  m.at("params").dump());
    }
    // Only for readers to report: any stage loads any checkpoint.
    const auto& stage = m.at("stage");
    if (!stage.is_number_integer() || stage.get<std::int64_t>() < 0 ||
        stage.get<std::int64_t>() > 3)
      throw Error("\"stage\" is not a ZeRO stage from 0 to 3");
    impl->manifest.stage = stage.get<int>();
    impl->manifest.ranks = static_cast<int>(shards.size());
    impl->manifest.params = covered;
    impl->manifest.model = m.at("model").dump();
    impl->model = m.at("model");
  } catch (const Error& e) {
    throw Error(manifest_path + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(manifest_path + ": malformed (" + std::string(e.what()) + ")");
  }
  return Checkpoint(std::move(impl));
}

const std::string& Checkpoint::folder() const {
  return impl_->folder;
}
const Manifest& Checkpoint::manifest() const {
  return impl_->manifest;
}
std::uint64_t Checkpoint::params() const {
  return impl_->manifest.params;
}
EngineState Checkpoint::state() const {
  return impl_->manifest.state;
}

void Checkpoint::read(FlatRange range, float* master, float* m, float* v) const {
  const auto& index = impl_->index;
  auto it = std::upper_bound(index.begin(), index.end(), range.offset,
                             [](std::uint64_t off, const auto& e) { return off < e.offset; });
  if (it != index.begin()) --it;
  std::uint64_t at = range.offset;
  const std::uint64_t end = range.offset + range.count;
  for (; at < end && it != index.end(); ++it) {
    if (it->offset + it->count <= at) continue;
    const std::uint64_t from = at, to = std::min(end, it->offset + it->count);
    const std::uint64_t local = it->local + (from - it->offset), n = to - from;
    float* outs[3] = {master, m, v};
    for (int block = 0; block < 3; ++block) {
      if (!outs[block]) continue;
      const off_t pos =
          static_cast<off_t>(kHeaderBytes + 4 * (block * impl_->elements[it->shard] + local));
      char* dst = reinterpret_cast<char*>(outs[block] + (from - range.offset));
      std::size_t left = n * 4;
      off_t p = pos;
      while (left > 0) {
        const ssize_t got = ::pread(impl_->fds[it->shard], dst, left, p);
        if (got <= 0) throw Error("cannot read " + impl_->files[it->shard] + ": " + errno_text());
        dst += got, p += got, left -= static_cast<std::size_t>(got);
      }
    }
    at = to;
  }
  if (at != end) throw Error("checkpoint " + impl_->folder + " does not cover the range asked for");
}

Engine::RangeReader Checkpoint::reader() const {
  return [this](FlatRange r, float* master, float* m, float* v) { read(r, master, m, v); };
}

void Checkpoint::check_model(const std::string& model_config) const {
  const nlohmann::json model = nlohmann::json::parse(model_config, nullptr, false);
  ZERODP_CHECK_MSG(model.is_object(), "check_model: the model config is not a JSON object");
  const nlohmann::json& saved = impl_->model;
  for (const auto& [key, value] : saved.items()) {
    if (key == "data" || key == "checkpoint_activations")
      continue;  // weights do not depend on them
    if (!model.contains(key) || model.at(key) != value) {
      throw Error((fs::path(impl_->folder) / kManifest).string() +
                  ": a checkpoint of another model configuration: " + quote(key) + " is " +
                  value.dump() + " there, " +
                  (model.contains(key) ? model.at(key).dump() : "absent") + " here");
    }
  }
}

}  // namespace zerodp::checkpoint
