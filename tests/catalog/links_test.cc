// The link catalogue (catalog/links.h): every rate sourced, the names found as typed, a card's
// usual server, and a ring's rate across nodes as NVIDIA measures it.
#include <gtest/gtest.h>

#include <string>

#include "zerodp/catalog/links.h"

namespace zerodp::catalog {
namespace {

TEST(Links, EveryRateIsPositiveAndSourced) {
  ASSERT_GE(link_catalogue().size(), 9u);
  for (const LinkSpec& l : link_catalogue()) {
    EXPECT_GT(l.bytes_per_second, 0) << l.name;
    EXPECT_EQ(std::string(l.source).rfind("https://", 0), 0u) << l.name;
    EXPECT_FALSE(l.quoted.empty()) << l.name;
    EXPECT_FALSE(l.nominal.empty()) << l.name;
    EXPECT_EQ(find_link(l.name), &l);
  }
  EXPECT_EQ(find_link("NVLink4"), find_link("nvlink4"));
  EXPECT_EQ(find_link("ib_ndr"), find_link("ib-ndr"));
  EXPECT_EQ(find_link("infiniband"), nullptr);
}

TEST(Links, ARingAcrossNodesRunsOnAllOfANodesNics) {
  // NVIDIA: 192 GB/s all-reduce busbw on DGX A100s' eight 200 Gb/s NICs.
  EXPECT_DOUBLE_EQ(bus_rate_across_nodes(*find_link("ib-hdr"), 8), 192e9);
  // A node's EFA is the node's whatever its GPUs.
  EXPECT_DOUBLE_EQ(bus_rate_across_nodes(*find_link("efa-p5"), 8), 364.87e9);
  EXPECT_DOUBLE_EQ(bus_rate_across_nodes(*find_link("efa-p5"), 4), 364.87e9);
  // A measured rate stays below the nominal one it was measured on.
  EXPECT_LT(find_link("nvlink4")->bytes_per_second, 450e9);
  EXPECT_LT(find_link("ib-ndr")->bytes_per_second, 50e9);
}

TEST(Links, ACardsUsualServer) {
  const UsualServer h100 = usual_server("h100-80gb");
  EXPECT_EQ(h100.intra, find_link("nvlink4"));
  EXPECT_EQ(h100.inter, find_link("ib-ndr"));
  EXPECT_EQ(h100.gpus_per_node, 8);
  EXPECT_EQ(usual_server("A100-40GB").intra, find_link("nvlink3"));
  const UsualServer rtx = usual_server("rtx-4090");
  EXPECT_EQ(rtx.intra, find_link("pcie4"));
  EXPECT_EQ(rtx.inter, nullptr);
  EXPECT_FALSE(rtx.gpus_per_node.has_value());
  EXPECT_EQ(usual_server("v100-32gb").intra, nullptr);  // NVLink 2: not in the catalogue
  EXPECT_EQ(usual_server("nonexistent").intra, nullptr);
}

}  // namespace
}  // namespace zerodp::catalog
