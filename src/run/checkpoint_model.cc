#include "zerodp/run/checkpoint_model.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "run/shown_json.h"
#include "zerodp/common/error.h"

namespace zerodp::run {
namespace {

using nlohmann::json;

// model.KEY of a manifest as a whole number from lo to hi, or Error naming it.
std::uint64_t config_whole(const json& model, const char* key, std::uint64_t lo, std::uint64_t hi) {
  const std::string name = std::string("model.") + key;
  if (!model.contains(key)) throw Error(name + " is missing");
  const json& v = model.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < lo || v.get<std::uint64_t>() > hi) {
    throw Error(name + " is " + shown_json(v) + ", expected a whole number from " +
                std::to_string(lo) + " to " + std::to_string(hi));
  }
  return v.get<std::uint64_t>();
}

// A GPT's config as save() recorded it, every field of its type and range, so that ModelSpec
// reads it without rounding or wrapping.
void check_gpt_config(const json& model) {
  for (const char* key : {"n_layer", "n_head", "n_embd", "n_positions"})
    config_whole(model, key, 1, 1'000'000);
  config_whole(model, "data_seed", 0, ~std::uint64_t{0});
  if (config_whole(model, "vocab_size", 0, ~std::uint64_t{0}) != 256)
    throw Error("model.vocab_size is " + shown_json(model.at("vocab_size")) +
                ", the byte-level GPT has 256");
  if (model.at("n_embd").get<std::uint64_t>() % model.at("n_head").get<std::uint64_t>() != 0)
    throw Error("model.n_head " + shown_json(model.at("n_head")) +
                " does not divide model.n_embd " + shown_json(model.at("n_embd")));
  if (model.contains("data") && !model.at("data").is_string())
    throw Error("model.data is " + shown_json(model.at("data")) + ", expected a file name");
  if (model.contains("checkpoint_activations") && !model.at("checkpoint_activations").is_boolean())
    throw Error("model.checkpoint_activations is not true or false");
  if (model.contains("compute") && model.at("compute") != "fp32" && model.at("compute") != "bf16")
    throw Error("model.compute is " + shown_json(model.at("compute")) + ", expected fp32 or bf16");
}

}  // namespace

LoadedModel load_gpt(const std::string& folder, const std::string& data, bool read_params) {
  if (folder.empty()) {
    throw InvalidArgument(field_ref("checkpoint") + ": expected a checkpoint folder or a " +
                          field_ref("save_dir") + " of zerodp train");
  }
  checkpoint::Checkpoint ck = checkpoint::Checkpoint::open(folder);
  const nlohmann::json model =
      nlohmann::json::parse(ck.manifest().model);  // open() checked: an object
  const json type = model.contains("type") ? model.at("type") : json("?");
  if (type != "gpt") {
    throw InvalidArgument(
        field_ref("checkpoint") + ": " + ck.folder() + " holds a " +
        (type.is_string() ? printable(type.get<std::string>(), 64) : shown_json(type)) +
        ", not a GPT");
  }
  std::optional<ModelSpec> parsed;
  try {
    check_gpt_config(model);
  } catch (const Error& e) {
    throw Error(ck.folder() + "/manifest.json: " + e.what());
  }
  try {
    parsed.emplace(model, data);
  } catch (const InvalidArgument& e) {
    if (e.field() == "data") {
      if (!data.empty()) throw;
      throw InvalidArgument(
          "data", field_ref("data") + ": the corpus this checkpoint was trained on, " +
                      quote(model.value("data", std::string())) +
                      ", is not readable here: give it with " + field_ref("data") + " FILE");
    }
    throw Error(ck.folder() + "/manifest.json: model config: " + e.text());
  } catch (const UsageError& e) {
    throw Error(ck.folder() + "/manifest.json: model config: " + e.text());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ck.folder() + "/manifest.json: model config malformed (" + e.what() + ")");
  }
  ModelSpec spec = std::move(*parsed);
  // The weights must be this model's: a hand-edited config must not read past them.
  if (spec.param_count() != ck.params() ||
      (model.contains("params") && model.at("params") != ck.params())) {
    throw Error(ck.folder() + "/manifest.json: the model config makes " +
                std::to_string(spec.param_count()) + " parameters (model.params says " +
                (model.contains("params") ? shown_json(model.at("params")) : "nothing") +
                "), the shards hold " + std::to_string(ck.params()));
  }
  std::vector<float> params;
  if (read_params) {
    params.resize(ck.params());
    ck.read({0, ck.params()}, params.data(), nullptr, nullptr);
  }
  return {std::move(ck), std::move(spec), std::move(params)};
}

namespace {

// Under mpirun every process runs train; only the one of world rank 0 writes manifests.
bool mpi_world_rank_zero() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (const char* rank = std::getenv(name)) return std::string_view(rank) == "0";
  }
  return true;  // a singleton MPI process
}

}  // namespace

std::optional<checkpoint::SaveDir> claim_save_dir(const std::string& save_dir, bool mpi,
                                                  const checkpoint::Checkpoint* resumed) {
  if (save_dir.empty() || (mpi && !mpi_world_rank_zero())) return std::nullopt;
  return checkpoint::SaveDir::claim(save_dir, resumed);
}

}  // namespace zerodp::run
