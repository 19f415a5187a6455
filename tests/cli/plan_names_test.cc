// Config files whose names hold control characters (an escape sequence, a newline), given to
// plan. The plan's lines name the file they read (model:, deepspeed config:, GPU peak:), and
// its warnings name the config; written raw, such a name recolours or retitles the terminal
// and splits a line in two, so a log reader takes half a name for a line of its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_zerodp;
using testing::slurp;
using zerodp::testing::fresh_folder;

// The control bytes of `text` other than its line ends, as \xHH: empty when none.
std::string control_bytes_in(const std::string& text) {
  std::string found;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n') || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      found += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 15];
    }
  }
  return found;
}

struct HostileConfigs {
  std::string ds, model;              // the paths, as given
  std::string ds_shown, model_shown;  // as a line shows them: quoted, controls escaped
};

// A DeepSpeed config (with a key this reader does not know, for a warning that names it) and a
// model config, each under a name holding an escape sequence and a newline.
HostileConfigs hostile_configs(const std::string& dir) {
  HostileConfigs c;
  c.ds = dir + "/ds\x1b[31m\nred.json";
  c.ds_shown = "'" + dir + "/ds\\x1b[31m\\nred.json'";
  c.model = dir + "/cfg\x1b]0;owned\x07\n.json";
  c.model_shown = "'" + dir + "/cfg\\x1b]0;owned\\x07\\n.json'";
  nlohmann::json ds =
      nlohmann::json::parse(slurp(ZERODP_SOURCE_DIR "/examples/ds_zero3_offload.json"));
  ds["a_key_no_reader_knows"] = 1;
  std::ofstream(c.ds) << ds.dump(2);
  fs::copy_file(ZERODP_SOURCE_DIR "/examples/handwritten_config.json", c.model);
  return c;
}

TEST(PlanNames, ANameWithControlCharactersIsShownQuotedAndEscapedOnEveryLine) {
  const std::string dir = fresh_folder("plan_control_names");
  const HostileConfigs c = hostile_configs(dir);
  const CliResult r = run_zerodp("plan --model-config '" + c.model + "' --deepspeed-config '" +
                                 c.ds + "' --gpus 4");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(control_bytes_in(r.out), "") << r.out;
  EXPECT_EQ(control_bytes_in(r.err), "") << r.err;
  EXPECT_NE(r.out.find("model: " + c.model_shown + " ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deepspeed config: " + c.ds_shown + ": ZeRO-3"), std::string::npos) << r.out;
  // The warning about the unknown key: one line, naming the config as the plan does.
  EXPECT_EQ(r.err, "zerodp: warning: " + c.ds_shown +
                       ": keys this reader does not know, ignored: a_key_no_reader_knows\n");
}

TEST(PlanNames, JsonShowsTheNamesAsTheLinesDo) {
  const std::string dir = fresh_folder("plan_control_names_json");
  const HostileConfigs c = hostile_configs(dir);
  const CliResult r = run_zerodp("plan --model-config '" + c.model + "' --deepspeed-config '" +
                                 c.ds + "' --gpus 4 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
  EXPECT_EQ(j["inputs"]["deepspeed_config"], c.ds_shown) << j["inputs"].dump();
  EXPECT_EQ(j["model"]["name"], c.model_shown) << j["model"].dump();
}

}  // namespace
}  // namespace zerodp
