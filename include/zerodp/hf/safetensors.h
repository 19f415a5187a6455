// safetensors files, as Hugging Face's safetensors library writes and reads them.
//
// Format: 8 bytes, the header length N as a little-endian unsigned 64-bit integer; N bytes of
// UTF-8 JSON; then the data. The JSON maps each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end]} with offsets in bytes relative to the start of the data, and
// may hold "__metadata__", a map of strings. Tensors are little-endian, row-major, and tile
// the data without gaps or overlaps.
//
// The writer streams: it asks a callback for one tensor at a time and holds only that one
// (plus the header), so an export never needs all the weights in memory. It writes the
// tensors in the order given, pads the header with spaces so that the data starts at a
// multiple of 8 bytes, writes to "<path>.tmp" and renames it over path when complete.
// Failures (cannot create, disk full) throw Error naming the path; a malformed file read
// throws Error naming what is wrong. Stateless functions: safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace zerodp::hf {

// One tensor to write, as F32.
struct TensorSpec {
  std::string name;
  std::vector<std::size_t> shape;  // row-major; [] is a scalar
  std::size_t elements() const;
};

// fill(i, out): write tensor i's elements into out (out.size() == tensors[i].elements()).
using TensorFill = std::function<void(std::size_t index, std::span<float> out)>;

// Writes an F32 safetensors file. metadata lands in "__metadata__" (Hugging Face's loaders
// want {"format": "pt"} there; the caller passes it). Throws Error on I/O failure and
// ZERODP_CHECK fails on duplicate or empty names.
void write_safetensors(const std::string& path, std::span<const TensorSpec> tensors,
                       const TensorFill& fill, const std::map<std::string, std::string>& metadata);

struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<std::size_t> shape;
  std::size_t data_begin = 0;       // byte offsets in the data section
  std::vector<std::uint8_t> bytes;  // the tensor's raw little-endian bytes

  // The elements as floats; throws Error unless dtype is F32.
  std::vector<float> f32() const;
};

struct SafetensorsFile {
  std::uint64_t header_bytes = 0;  // N: the JSON's length, padding included
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsTensor> tensors;  // in data order

  // nullptr when absent.
  const SafetensorsTensor* find(const std::string& name) const;
};

// Reads and validates a whole file: header length within the file, JSON an object, every
// tensor's dtype known, byte size equal to its shape's, offsets tiling the data exactly.
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace zerodp::hf
