#include "zerodp/hf/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"

namespace zerodp::hf {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this writer copies floats as they are");

namespace {

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

// The official loader refuses headers above 100 MB; so do we, before allocating.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

std::size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 0;
}

}  // namespace

std::size_t TensorSpec::elements() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

void write_safetensors(const std::string& path, std::span<const TensorSpec> tensors,
                       const TensorFill& fill, const std::map<std::string, std::string>& metadata) {
  // Header, in the order given (ordered_json keeps insertion order).
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::size_t offset = 0, largest = 0;
  for (const auto& t : tensors) {
    ZERODP_CHECK_MSG(!t.name.empty() && t.name != "__metadata__" && names.insert(t.name).second,
                     "tensor names must be unique and not empty: '" + t.name + "'");
    const std::size_t bytes = t.elements() * sizeof(float);
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    largest = std::max(largest, t.elements());
  }
  std::string json = header.dump();
  json.append((8 - (8 + json.size()) % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<std::uint8_t>(json.size() >> (8 * i));

  // Through a temporary file of its own (common/file.h), removed again if anything fails (I/O or
  // the fill callback), so a half-written file never sits at path.
  AtomicFile file(path);
  file.write(length, 8);
  file.write(json.data(), json.size());
  std::vector<float> buffer(largest);  // one tensor at a time
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::span<float> out(buffer.data(), tensors[i].elements());
    fill(i, out);
    file.write(out.data(), out.size_bytes());
  }
  file.commit();
}

std::vector<float> SafetensorsTensor::f32() const {
  if (dtype != "F32") throw Error("tensor '" + name + "' is " + dtype + ", not F32");
  std::vector<float> out(bytes.size() / sizeof(float));
  // memcpy from or to the null data() of an empty vector is undefined, even for 0 bytes.
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {

// Reads one file in the order of its format: the length, the JSON header, the tensors' bytes.
// Every failure names the file and what is wrong with it.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path)
      : path_(path), file_(std::fopen(path.c_str(), "rb"), &std::fclose) {
    if (!file_) throw Error("cannot read '" + path + "': " + std::strerror(errno));
  }

  Error bad(const std::string& why) const {
    return Error("'" + path_ + "' is not a valid safetensors file: " + why);
  }

  // The header's JSON text; sets header_bytes and data_bytes_.
  std::string read_header(SafetensorsFile& result) {
    std::fseek(file_.get(), 0, SEEK_END);
    const long end = std::ftell(file_.get());
    std::fseek(file_.get(), 0, SEEK_SET);
    if (end < 8) throw bad("shorter than the 8-byte header length");
    const auto file_bytes = static_cast<std::uint64_t>(end);
    std::uint8_t length[8];
    if (std::fread(length, 1, 8, file_.get()) != 8) throw bad("cannot read the header length");
    for (int i = 7; i >= 0; --i) result.header_bytes = (result.header_bytes << 8) | length[i];
    if (result.header_bytes > kMaxHeaderBytes || result.header_bytes > file_bytes - 8) {
      throw bad("header length " + std::to_string(result.header_bytes) + " exceeds the file");
    }
    std::string json(result.header_bytes, '\0');
    if (std::fread(json.data(), 1, json.size(), file_.get()) != json.size()) {
      throw bad("cannot read the header");
    }
    data_bytes_ = file_bytes - 8 - result.header_bytes;
    return json;
  }

  // The metadata and the tensors' names, dtypes, shapes and places, checked against the data.
  void parse_header(const std::string& json, SafetensorsFile& result) const {
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(json);
    } catch (const nlohmann::json::exception& e) {
      throw bad(std::string("header is not JSON (") + e.what() + ")");
    }
    if (!header.is_object()) throw bad("header is not a JSON object");
    try {
      for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
          for (const auto& [key, value] : entry.items()) {
            result.metadata[key] = value.get<std::string>();
          }
        } else {
          result.tensors.push_back(parse_tensor(name, entry));
        }
      }
    } catch (const nlohmann::json::exception& e) {
      throw bad(std::string("malformed header entry (") + e.what() + ")");
    }
  }

  // Every tensor's bytes; the tensors must tile the data section without gap or overlap.
  void read_data(SafetensorsFile& result) {
    std::sort(result.tensors.begin(), result.tensors.end(),
              [](const auto& a, const auto& b) { return a.data_begin < b.data_begin; });
    std::uint64_t next = 0;
    for (auto& t : result.tensors) {
      if (t.data_begin != next)
        throw bad("tensor data has a gap or an overlap at byte " + std::to_string(next));
      const long at = static_cast<long>(8 + result.header_bytes + t.data_begin);
      if (std::fseek(file_.get(), at, SEEK_SET) != 0 ||
          std::fread(t.bytes.data(), 1, t.bytes.size(), file_.get()) != t.bytes.size()) {
        throw bad("cannot read tensor '" + t.name + "'");
      }
      next += t.bytes.size();
    }
    if (next != data_bytes_)
      throw bad("data section has " + std::to_string(data_bytes_ - next) +
                " bytes that belong to no tensor");
  }

 private:
  SafetensorsTensor parse_tensor(const std::string& name, const nlohmann::json& entry) const {
    SafetensorsTensor t;
    t.name = name;
    t.dtype = entry.at("dtype").get<std::string>();
    t.shape = entry.at("shape").get<std::vector<std::size_t>>();
    const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
    const std::size_t element_bytes = dtype_bytes(t.dtype);
    if (element_bytes == 0) throw bad("tensor '" + name + "' has unknown dtype " + t.dtype);
    if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_bytes_) {
      throw bad("tensor '" + name + "' has data_offsets outside the data");
    }
    std::size_t elements = 1;
    for (std::size_t d : t.shape) elements *= d;
    if (offsets[1] - offsets[0] != elements * element_bytes) {
      throw bad("tensor '" + name + "' holds " + std::to_string(offsets[1] - offsets[0]) +
                " bytes, its shape and dtype need " + std::to_string(elements * element_bytes));
    }
    t.data_begin = offsets[0];
    t.bytes.resize(offsets[1] - offsets[0]);
    return t;
  }

  std::string path_;
  File file_;
  std::uint64_t data_bytes_ = 0;
};

}  // namespace

SafetensorsFile read_safetensors(const std::string& path) {
  SafetensorsReader reader(path);
  SafetensorsFile result;
  const std::string json = reader.read_header(result);
  reader.parse_header(json, result);
  reader.read_data(result);
  return result;
}

}  // namespace zerodp::hf
