// GPUs by name (zerodp/catalog/gpus.h): each card's reported memory agrees with the report it
// cites, sits below what it is sold as by the margin real cards show, and names resolve and
// suggest as a user types them.
#include "zerodp/catalog/gpus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "zerodp/catalog/models.h"
#include "zerodp/catalog/names.h"
#include "zerodp/common/units.h"

namespace zerodp::catalog {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

TEST(GpuCatalogue, EveryCardReportsWhatItsSourceQuotesBelowWhatItIsSoldAs) {
  std::set<std::string> names;
  for (const GpuSpec& g : gpu_catalogue()) {
    SCOPED_TRACE(std::string(g.name));
    EXPECT_TRUE(names.insert(std::string(g.name)).second) << "named twice";
    // The bytes are the quoted figure: PyTorch's GiB with two decimals, or the exact count
    // (bytes, KB as rocminfo prints them, or MiB as nvidia-smi does).
    const std::string gib = units::format_bytes_in(g.reported_bytes, {"GiB", double(kGiB)});
    const bool quoted =
        g.reported_as.find(gib) != std::string::npos ||
        g.reported_as.find(std::to_string(g.reported_bytes)) != std::string::npos ||
        g.reported_as.find(std::to_string(g.reported_bytes / 1024) + "(") != std::string::npos ||
        (g.reported_bytes % (1 << 20) == 0 &&
         g.reported_as.find(std::to_string(g.reported_bytes >> 20) + "MiB") != std::string::npos);
    EXPECT_TRUE(quoted) << gib << " vs " << g.reported_as;
    // A card reports less than the GiB it is sold as (ECC, the driver's reserve), and not
    // much less: from 92 % (T4, 14.75 of 16) upwards on every card found.
    const double sold = double(g.sold_gb) * double(kGiB);
    EXPECT_LT(double(g.reported_bytes), sold);
    EXPECT_GT(double(g.reported_bytes), 0.9 * sold);
    // A GitHub thread, but for the H200's nvidia-smi total, which no thread found quotes.
    const bool github = std::string(g.source).rfind("https://github.com/", 0) == 0;
    EXPECT_TRUE(github || g.name == "h200") << g.source;
    EXPECT_EQ(find_gpu(g.name), &g);
  }
  EXPECT_GE(names.size(), 20u);
}

// Each rate quotes its vendor's figure: the dense one, or twice it where the vendor counts
// sparsity; names a card of the catalogue once; and orders the generations as they are.
TEST(GpuCatalogue, EveryRateIsItsVendorsDenseFigure) {
  std::set<std::string> cards;
  for (const GpuRate& r : gpu_rates()) {
    SCOPED_TRACE(std::string(r.gpu));
    EXPECT_TRUE(cards.insert(std::string(r.gpu)).second) << "rated twice";
    ASSERT_NE(find_gpu(r.gpu), nullptr);
    EXPECT_EQ(gpu_rate(r.gpu), &r);
    const double tflops = r.dense_flops / 1e12 * (r.sparse_quoted ? 2 : 1);
    char figure[32];
    std::snprintf(figure, sizeof figure, "%g", tflops);
    std::string in_words = figure;  // 1979 is printed "1,979"; 4500 TFLOPS as "4.5 PFLOPS"
    if (tflops >= 1000 && tflops == std::floor(tflops)) {
      in_words = std::to_string(int(tflops) / 1000) + "," + std::string(figure).substr(1);
    }
    const bool quoted =
        std::string(r.quoted).find(in_words) != std::string::npos ||
        std::string(r.quoted).find(figure) != std::string::npos ||
        (tflops == 4500 && std::string(r.quoted).find("4.5 PFLOPS") != std::string::npos);
    EXPECT_TRUE(quoted) << figure << " vs " << r.quoted;
    EXPECT_EQ(std::string(r.source).rfind("https://", 0), 0u) << r.source;
  }
  EXPECT_GE(cards.size(), 17u);
  // None where no vendor figure was read; generations in order; a GeForce card at its
  // fp32-accumulate rate, below the workstation card of the same chip.
  EXPECT_EQ(gpu_rate("a10g"), nullptr);
  EXPECT_EQ(gpu_rate("nonexistent"), nullptr);
  EXPECT_LT(gpu_rate("v100-32gb")->dense_flops, gpu_rate("a100-80gb")->dense_flops);
  EXPECT_LT(gpu_rate("a100-80gb")->dense_flops, gpu_rate("h100-80gb")->dense_flops);
  EXPECT_LT(gpu_rate("h100-80gb")->dense_flops, gpu_rate("b200")->dense_flops);
  EXPECT_LT(gpu_rate("rtx-3090")->dense_flops, gpu_rate("rtx-a6000")->dense_flops);
  EXPECT_EQ(gpu_rate("H100 80GB"), gpu_rate("h100-80gb"));  // names as users type them
}

TEST(GpuCatalogue, TheA100s40GBIsMoreThan40DecimalGB) {
  // The flagship's units: "40GB" typed as decimal is 40.00 GB; the card reports 42.30 GB.
  const GpuSpec* a100 = find_gpu("a100-40gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->reported_bytes, 42'298'834'944u);
  EXPECT_GT(a100->reported_bytes, 40'000'000'000u);
  EXPECT_LT(a100->reported_bytes, 40 * kGiB);
}

TEST(GpuCatalogue, TheCardsUsersAskedForResolveAsTheyTypeThem) {
  for (const char* typed :
       {"H200", "b200", "H100 NVL", "h100_nvl", "L40S", "RTX 6000 Ada", "rtx6000ada"}) {
    EXPECT_NE(find_gpu(typed), nullptr) << typed;
  }
  EXPECT_EQ(find_gpu("RTX 6000 Ada")->reported_bytes, 4443 * kGiB / 100);  // 44.43 GiB
  EXPECT_EQ(find_gpu("b200")->reported_bytes, 17835 * kGiB / 100);         // 178.35 GiB
  EXPECT_EQ(find_gpu("h200")->reported_bytes, std::uint64_t{143'771} << 20);
  // The PCIe H100 has no public report of its total; the NVL is another card.
  EXPECT_EQ(find_gpu("h100-pcie"), nullptr);
  EXPECT_EQ(suggest_gpu("h100-pcie"), "");
  EXPECT_NE(find_gpu("rtx-6000-ada"), find_gpu("rtx-a6000"));
}

TEST(GpuCatalogue, NamesMatchAsTypedAndUnknownOnesGetASuggestion) {
  EXPECT_EQ(find_gpu("A100-80GB"), find_gpu("a100_80gb"));
  EXPECT_EQ(find_gpu("H100 80GB"), find_gpu("h100-80gb"));
  EXPECT_NE(find_gpu("rtx4090"), nullptr);
  EXPECT_EQ(find_gpu("a100"), nullptr);  // two cards: which one is the user's to say
  EXPECT_EQ(suggest_gpu("a100"), "a100-40gb");
  EXPECT_EQ(suggest_gpu("rtx-4080"), "");  // another card, not a typo
  EXPECT_EQ(suggest_gpu("rtx-490"), "rtx-4090");
  EXPECT_EQ(suggest_gpu("h10080g"), "h100-80gb");
  EXPECT_EQ(suggest_gpu("tpu-v5e"), "");
  EXPECT_EQ(suggest_gpu(std::string(10'000, 'x')), "");
}

TEST(CatalogueNames, AModelNameTypedLooselyGetsItsSuggestion) {
  EXPECT_EQ(suggest_model("llama3-8b"), "llama-3-8b");
  EXPECT_EQ(suggest_model("Llama-3-8"), "llama-3-8b");
  EXPECT_EQ(suggest_model("gpt-5"), "");
  EXPECT_EQ(normalised_name("Qwen2.5-0.5B"), "qwen2505b");
}

TEST(GpuCatalogue, CardsSoldAsAFigureAreFoundInEitherUnit) {
  const auto by_gb = cards_sold_as(40'000'000'000u);
  ASSERT_EQ(by_gb.size(), 1u);
  EXPECT_EQ(by_gb[0]->name, "a100-40gb");
  EXPECT_EQ(cards_sold_as(40 * kGiB), by_gb);
  // Three cards are sold as 80 GB (A100, A800, H100); none as 79 GB.
  EXPECT_EQ(cards_sold_as(80'000'000'000u).size(), 3u);
  EXPECT_TRUE(cards_sold_as(79'000'000'000u).empty());
}

}  // namespace
}  // namespace zerodp::catalog
