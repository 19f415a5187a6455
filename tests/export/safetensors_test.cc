#include "zerodp/hf/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zerodp/common/error.h"
#include "zerodp/hf/gpt_export.h"
#include "zerodp/model/gpt.h"

namespace zerodp::hf {
namespace {

namespace fs = std::filesystem;

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("zerodp_safetensors_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }

  static std::vector<std::uint8_t> file_bytes(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void write_bytes(const std::string& p, const std::vector<std::uint8_t>& bytes) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(bytes.size()));
  }
  // A file with the given header JSON and data bytes (no padding).
  static std::vector<std::uint8_t> raw_file(const std::string& json, std::size_t data_bytes) {
    std::vector<std::uint8_t> out(8 + json.size() + data_bytes, 0x11);
    for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(json.size() >> (8 * i));
    std::memcpy(out.data() + 8, json.data(), json.size());
    return out;
  }

  fs::path dir_;
};

TEST_F(Safetensors, WritesTheFormatAndReadsItBackByteForByte) {
  const std::vector<TensorSpec> specs = {
      {"b.weight", {2, 3}}, {"a", {}}, {"empty", {0, 4}}, {"z.bias", {5}}};
  std::vector<std::vector<float>> values = {
      {1, 2, 3, 4, 5, 6}, {-7.5f}, {}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f}};
  std::vector<std::size_t> asked;
  write_safetensors(path("t.safetensors"), specs,
                    [&](std::size_t i, std::span<float> out) {
                      asked.push_back(i);
                      ASSERT_EQ(out.size(), values[i].size());
                      std::copy(values[i].begin(), values[i].end(), out.begin());
                    },
                    {{"format", "pt"}});
  EXPECT_EQ(asked, (std::vector<std::size_t>{0, 1, 2, 3}));  // one tensor at a time, in order
  EXPECT_FALSE(fs::exists(path("t.safetensors.tmp")));

  // The raw bytes: length, JSON padded with spaces to 8-byte alignment, then the floats.
  const auto bytes = file_bytes(path("t.safetensors"));
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  EXPECT_EQ((8 + n) % 8, 0u);
  const std::string json(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  const std::size_t last = json.find_last_not_of(' ');
  EXPECT_EQ(json[last], '}');
  EXPECT_LT(json.size() - last - 1, 8u);  // padded with at most 7 spaces
  const auto header = nlohmann::json::parse(json);
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  EXPECT_EQ(header["b.weight"]["dtype"], "F32");
  EXPECT_EQ(header["b.weight"]["shape"], (std::vector<int>{2, 3}));
  EXPECT_EQ(header["b.weight"]["data_offsets"], (std::vector<int>{0, 24}));
  EXPECT_EQ(header["a"]["shape"], std::vector<int>{});
  EXPECT_EQ(header["a"]["data_offsets"], (std::vector<int>{24, 28}));
  EXPECT_EQ(header["empty"]["data_offsets"], (std::vector<int>{28, 28}));
  EXPECT_EQ(header["z.bias"]["data_offsets"], (std::vector<int>{28, 48}));
  std::vector<float> data;
  for (const auto& v : values) data.insert(data.end(), v.begin(), v.end());
  ASSERT_EQ(bytes.size(), 8 + n + data.size() * 4);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n, data.data(), data.size() * 4), 0);

  const SafetensorsFile file = read_safetensors(path("t.safetensors"));
  EXPECT_EQ(file.header_bytes, n);
  EXPECT_EQ(file.metadata.at("format"), "pt");
  ASSERT_EQ(file.tensors.size(), 4u);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const SafetensorsTensor* t = file.find(specs[i].name);
    ASSERT_NE(t, nullptr) << specs[i].name;
    EXPECT_EQ(t->dtype, "F32");
    EXPECT_EQ(t->shape, specs[i].shape);
    EXPECT_EQ(t->f32(), values[i]);
  }
  EXPECT_EQ(file.find("nope"), nullptr);
}

TEST_F(Safetensors, MalformedFilesAreErrorsThatSayWhy) {
  auto error_of = [&](const std::vector<std::uint8_t>& bytes) -> std::string {
    write_bytes(path("bad"), bytes);
    try {
      read_safetensors(path("bad"));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({1, 2, 3}).find("shorter than"), std::string::npos);
  EXPECT_NE(error_of({200, 0, 0, 0, 0, 0, 0, 0, '{', '}'}).find("exceeds the file"),
            std::string::npos);
  EXPECT_NE(error_of(raw_file("{nope", 0)).find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(raw_file("[1]", 0)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(raw_file(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", 4))
                .find("unknown dtype"),
            std::string::npos);
  EXPECT_NE(error_of(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4))
                .find("its shape and dtype need 8"),
            std::string::npos);
  EXPECT_NE(error_of(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8))
                .find("gap"),
            std::string::npos);
  EXPECT_NE(error_of(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 6))
                .find("belong to no tensor"),
            std::string::npos);
  EXPECT_NE(error_of(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", 4))
                .find("outside the data"),
            std::string::npos);
  EXPECT_NE(error_of(raw_file(R"({"a":{"dtype":"F32"}})", 0)).find("malformed"), std::string::npos);
  EXPECT_EQ(error_of(raw_file(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})", 3)), "");
  EXPECT_THROW(read_safetensors(path("missing")), Error);
}

TEST_F(Safetensors, FailedWritesLeaveNoFile) {
  const std::vector<TensorSpec> specs = {{"a", {4}}};
  EXPECT_THROW(write_safetensors(path("no/such/dir/x.safetensors"), specs,
                                 [](std::size_t, std::span<float>) {}, {}),
               Error);
  EXPECT_THROW(
      write_safetensors(path("x.safetensors"), specs,
                        [](std::size_t, std::span<float>) { throw Error("source gone"); }, {}),
      Error);
  EXPECT_FALSE(fs::exists(path("x.safetensors")));
  EXPECT_FALSE(fs::exists(path("x.safetensors.tmp")));
}

TEST_F(Safetensors, GptExportHasHuggingFaceNamesLayoutsAndValues) {
  model::GptConfig c;
  c.layers = 2;
  c.heads = 2;
  c.hidden = 8;
  c.seq_len = 6;
  const std::size_t C = 8, L = 2;
  // Every parameter distinct, so a wrong offset or a missing transpose shows.
  std::vector<float> params(c.param_count());
  for (std::size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(i) * 0.5f;
  const model::GptModel model(c);

  std::vector<std::pair<std::size_t, std::size_t>> reads;
  export_gpt2_safetensors(
      c,
      [&](std::size_t offset, std::span<float> out) {
        reads.emplace_back(offset, out.size());
        std::memcpy(out.data(), params.data() + offset, out.size_bytes());
      },
      path("model.safetensors"));
  // The reader was asked for every parameter exactly once, in flat order.
  std::size_t next = 0;
  for (auto [offset, count] : reads) {
    EXPECT_EQ(offset, next);
    next += count;
  }
  EXPECT_EQ(next, params.size());

  // Hugging Face's GPT-2 state dict without "transformer.", in file order.
  std::vector<std::pair<std::string, std::vector<std::size_t>>> expected = {
      {"wte.weight", {256, C}}, {"wpe.weight", {6, C}}};
  for (std::size_t l = 0; l < L; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    const std::vector<std::pair<std::string, std::vector<std::size_t>>> block = {
        {h + "ln_1.weight", {C}},
        {h + "ln_1.bias", {C}},
        {h + "attn.c_attn.weight", {C, 3 * C}},
        {h + "attn.c_attn.bias", {3 * C}},
        {h + "attn.c_proj.weight", {C, C}},
        {h + "attn.c_proj.bias", {C}},
        {h + "ln_2.weight", {C}},
        {h + "ln_2.bias", {C}},
        {h + "mlp.c_fc.weight", {C, 4 * C}},
        {h + "mlp.c_fc.bias", {4 * C}},
        {h + "mlp.c_proj.weight", {4 * C, C}},
        {h + "mlp.c_proj.bias", {C}}};
    expected.insert(expected.end(), block.begin(), block.end());
  }
  expected.push_back({"ln_f.weight", {C}});
  expected.push_back({"ln_f.bias", {C}});

  const SafetensorsFile file = read_safetensors(path("model.safetensors"));
  EXPECT_EQ(file.metadata.at("format"), "pt");
  ASSERT_EQ(file.tensors.size(), expected.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& t = file.tensors[i];
    EXPECT_EQ(t.name, expected[i].first);
    EXPECT_EQ(t.shape, expected[i].second) << t.name;
    EXPECT_EQ(t.dtype, "F32");
    total += t.bytes.size() / 4;
  }
  EXPECT_EQ(total, c.param_count());
  EXPECT_EQ(fs::file_size(path("model.safetensors")), 8 + file.header_bytes + 4 * total);

  // Values, byte for byte, against the flat layout read through the model's own table:
  // vectors and embeddings as they are, matmul weights transposed from [out, in] to [in, out].
  for (const auto& unit : model.units()) {
    for (const auto& info : unit.tensors) {
      const SafetensorsTensor* t = file.find(info.name);
      ASSERT_NE(t, nullptr) << info.name;
      const float* src = params.data() + unit.param_offset + info.offset;
      std::vector<float> want;
      const bool linear = info.shape.size() == 2 && info.name.rfind("h.", 0) == 0;
      if (linear) {
        const std::size_t out = info.shape[0], in = info.shape[1];
        want.resize(out * in);
        for (std::size_t r = 0; r < in; ++r) {
          for (std::size_t k = 0; k < out; ++k) want[r * out + k] = src[k * in + r];
        }
      } else {
        std::size_t n = 1;
        for (auto d : info.shape) n *= d;
        want.assign(src, src + n);
      }
      ASSERT_EQ(t->bytes.size(), want.size() * 4) << info.name;
      EXPECT_EQ(std::memcmp(t->bytes.data(), want.data(), t->bytes.size()), 0) << info.name;
    }
  }
  // One spot by hand: HF c_attn.weight[in=1][out=2] is our [out=2][in=1] of block 0.
  const auto& block0 = model.units()[1];
  EXPECT_EQ(file.find("h.0.attn.c_attn.weight")->f32()[1 * 3 * C + 2],
            params[block0.param_offset + block0.tensors[2].offset + 2 * C + 1]);

  // From memory: the same file.
  export_gpt2_safetensors(c, params, path("again.safetensors"));
  EXPECT_EQ(file_bytes(path("again.safetensors")), file_bytes(path("model.safetensors")));
}

TEST_F(Safetensors, GptConfigJsonHasTheGpt2Keys) {
  model::GptConfig c;
  c.layers = 3;
  c.heads = 4;
  c.hidden = 64;
  c.seq_len = 32;
  const std::string p = config_path_beside(path("model.safetensors"));
  EXPECT_EQ(p, path("config.json"));
  write_gpt2_config(c, p);
  std::ifstream in(p);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["n_layer"], 3);
  EXPECT_EQ(j["n_head"], 4);
  EXPECT_EQ(j["n_embd"], 64);
  EXPECT_EQ(j["n_positions"], 32);
  EXPECT_EQ(j["vocab_size"], 256);
  EXPECT_EQ(j["model_type"], "gpt2");
  EXPECT_EQ(j["architectures"], std::vector<std::string>{"GPT2LMHeadModel"});
  EXPECT_EQ(j["layer_norm_epsilon"], 1e-5);
  EXPECT_EQ(j["activation_function"], "gelu_new");
  EXPECT_TRUE(j["n_inner"].is_null());
  EXPECT_EQ(j["tie_word_embeddings"], true);
  EXPECT_EQ(config_path_beside("model.safetensors"), "config.json");
}

}  // namespace
}  // namespace zerodp::hf
