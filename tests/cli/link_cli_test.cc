// `zerodp plan --link`: the web page's address for the same plan (cli/plan_link.h). The page
// itself opening it is tested in a browser (tests/web/page_test.py); here, what is printed.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

using testing::run_zerodp;

TEST(LinkCli, EveryPlanFlagIsAQueryKeyAndOutputFlagsAreNot) {
  const auto r = run_zerodp(
      "plan --params 175B --gpus 47 --gpu-memory 80GB --activations 20GB --overlap 60% "
      "--compute-time 10s --bandwidth 300GB/s --count-both-directions --json --link");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "index.html?params=175B&gpus=47&gpu-memory=80GB&activations=20GB"
            "&count-both-directions=1&compute-time=10s&bandwidth=300GB/s&overlap=60%25\n");
  EXPECT_EQ(r.err, "");
}

TEST(LinkCli, BaseFromTheFlagThenTheEnvironment) {
  EXPECT_EQ(run_zerodp("plan --params 1e9 --link --link-base https://example.org/z/").out,
            "https://example.org/z/?params=1e9\n");
  EXPECT_EQ(run_zerodp("plan --params 1e9 --link", "ZERODP_WEB_URL=https://h/p/ ").out,
            "https://h/p/?params=1e9\n");
  EXPECT_EQ(run_zerodp("plan --params 1e9 --link --link-base 'https://h/p/?x=1'",
                       "ZERODP_WEB_URL=https://ignored/ ")
                .out,
            "https://h/p/?x=1&params=1e9\n");
}

TEST(LinkCli, AFileFlagCarriesTheFilesTextEncoded) {
  const std::string path = ::testing::TempDir() + "/link-config.json";
  const std::string text = R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024,
    "n_embd": 768, "n_layer": 12, "n_head": 12})";
  std::ofstream(path) << text;
  const auto r = run_zerodp("plan --model-config '" + path + "' --gpus 8 --activations 0B --link");
  ASSERT_EQ(r.status, 0) << r.err;
  // Spaces, quotes, braces and the newline as %XX (":" and "," may stay bare in a query).
  EXPECT_EQ(r.out.rfind("index.html?model-config=%7B%22model_type%22:%20%22gpt2%22,", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("%0A%20%20%20%20%22n_embd%22"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("&gpus=8&"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find_first_of(" +#\"{}"), std::string::npos) << r.out;
}

TEST(LinkCli, ABadPlanPrintsItsErrorNotALink) {
  const auto r = run_zerodp("plan --params 1e9 --gpus eight --link");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "zerodp: --gpus: expected a whole number from 1 to 2147483647, got 'eight'\n");
}

}  // namespace
}  // namespace zerodp
