// Hugging Face Hub ids (zerodp/catalog/models.h: hub_aliases, find_model) and the "did you
// mean" for what is mistyped (zerodp/catalog/names.h): every alias reaches an entry of its own
// organisation, none is listed twice, the ids people type resolve, and a name or id one letter
// off, or a card's model number alone, gets the one it means.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "zerodp/catalog/gpus.h"
#include "zerodp/catalog/models.h"
#include "zerodp/catalog/names.h"

namespace zerodp::catalog {
namespace {

std::string lower(std::string_view s) {
  std::string out;
  for (const char c : s)
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

std::string_view organisation(std::string_view hf_id) {
  return hf_id.substr(0, hf_id.find('/'));
}

TEST(CatalogueHubIds, AHundredIdsEachResolvingToAnEntryOfItsOwnOrganisation) {
  ASSERT_GE(hub_aliases().size(), 100u);
  for (const HubAlias& a : hub_aliases()) {
    SCOPED_TRACE(std::string(a.hf_id));
    const CatalogueModel* entry = find_model(a.hf_id);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->name, a.model);
    // A Llama is Meta's, a Qwen Alibaba's: an alias names a release of the entry's publisher.
    ASSERT_NE(a.hf_id.find('/'), std::string_view::npos);
    EXPECT_EQ(organisation(a.hf_id), organisation(entry->hf_id));
    EXPECT_NE(lower(a.hf_id), lower(entry->hf_id)) << "the entry's own id, listed again";
    EXPECT_LE(a.hf_id.size(), kMaxTypedName) << "too long to be suggested";
  }
}

TEST(CatalogueHubIds, NoIdOrNameIsListedTwiceInAnyCase) {
  std::set<std::string> seen;
  for (const CatalogueModel& m : model_catalogue()) {
    EXPECT_TRUE(seen.insert(lower(m.name)).second) << m.name;
    EXPECT_TRUE(seen.insert(lower(m.hf_id)).second) << m.hf_id;
  }
  for (const HubAlias& a : hub_aliases()) {
    EXPECT_TRUE(seen.insert(lower(a.hf_id)).second) << a.hf_id;
  }
}

TEST(CatalogueHubIds, TheIdsPeopleFineTuneResolveToTheirEntryAndItsSource) {
  const CatalogueModel* llama = find_model("meta-llama/Llama-3.1-8B-Instruct");
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->name, "llama-3.1-8b");
  // The plan cites the entry's config, the one its count was checked against.
  EXPECT_EQ(llama->hf_id, "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(find_model("META-LLAMA/llama-3.1-8b-instruct"), llama);
  ASSERT_NE(find_model("Qwen/Qwen2.5-7B-Instruct"), nullptr);
  EXPECT_EQ(find_model("Qwen/Qwen2.5-7B-Instruct")->name, "qwen2.5-7b");
  ASSERT_NE(find_model("google/gemma-2-9b-it"), nullptr);
  EXPECT_EQ(find_model("google/gemma-2-9b-it")->name, "gemma-2-9b");
  // Matched whole: a prefix or a near miss is no id.
  EXPECT_EQ(find_model("meta-llama/Llama-3.1-8B-Instruc"), nullptr);
  EXPECT_EQ(find_model("Llama-3.1-8B-Instruct"), nullptr);
  EXPECT_EQ(find_model(" meta-llama/Llama-3.1-8B-Instruct"), nullptr);
}

TEST(CatalogueHubIds, AVariantOfAnotherSizeIsItsOwnEntry) {
  auto vocab = [](std::string_view id) {
    const CatalogueModel* m = find_model(id);
    return m ? parse_model_config(m->config_json, std::string(id)).vocab : 0;
  };
  // Mistral 7B v0.3 extends the vocabulary: its Instruct is not v0.1's size.
  EXPECT_EQ(vocab("mistralai/Mistral-7B-Instruct-v0.2"), 32000u);
  EXPECT_EQ(vocab("mistralai/Mistral-7B-Instruct-v0.3"), 32768u);
  EXPECT_NE(find_model("mistralai/Mistral-7B-Instruct-v0.3"),
            find_model("mistralai/Mistral-7B-Instruct-v0.2"));
  // Qwen2.5 ties the embeddings up to 3B, not from 7B: the Instruct releases follow their size.
  auto tied = [](std::string_view id) {
    return parse_model_config(find_model(id)->config_json, std::string(id)).tied_embeddings;
  };
  EXPECT_TRUE(tied("Qwen/Qwen2.5-3B-Instruct"));
  EXPECT_FALSE(tied("Qwen/Qwen2.5-7B-Instruct"));
}

TEST(CatalogueHubIds, TheCatalogueListsEntriesNotAliases) {
  for (const CatalogueModel& m : model_catalogue()) {
    EXPECT_EQ(m.name.find('/'), std::string_view::npos) << m.name;
  }
  EXPECT_LT(model_catalogue().size(), hub_aliases().size());
  EXPECT_EQ(catalogue_names().find("Instruct"), std::string::npos);
  EXPECT_NE(catalogue_names().find("qwen2.5-7b"), std::string::npos);
}

TEST(CatalogueNames, AHubIdOneLetterOffGetsThatId) {
  EXPECT_EQ(suggest_model("meta-llama/Llama-3.1-8B-Instructt"), "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(suggest_model("meta-llama/Llama-3.1-8B-Instrukt"), "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(suggest_model("Qwen/Qwen2.5-7B-Instruc"), "Qwen/Qwen2.5-7B-Instruct");
  EXPECT_EQ(suggest_model("google/gemma-2-9b-itt"), "google/gemma-2-9b-it");
  // The organisation left out: the id that adds the least to what was typed.
  EXPECT_EQ(suggest_model("Llama-3.1-8B-Instruct"), "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(suggest_model("QwQ-32B"), "Qwen/QwQ-32B");
  // A digit changed is another model, however close the rest.
  EXPECT_EQ(suggest_model("meta-llama/Llama-3.1-9B-Instruct"), "");
  EXPECT_EQ(suggest_model("gpt5"), "");
  EXPECT_EQ(suggest_model("gpt-5"), "");
  EXPECT_EQ(suggest_model("llama3-8b"), "llama-3-8b");
}

TEST(CatalogueNames, AModelNumberAloneNamesTheOneCardThatCarriesIt) {
  EXPECT_EQ(suggest_gpu("a6000"), "rtx-a6000");
  EXPECT_EQ(suggest_gpu("A6000"), "rtx-a6000");
  EXPECT_EQ(suggest_gpu("4090"), "rtx-4090");
  EXPECT_EQ(suggest_gpu("h100"), "h100-80gb");
  // Three cards are 80gb; a part of a word is no word.
  EXPECT_EQ(suggest_gpu("80gb"), "");
  EXPECT_EQ(suggest_gpu("6000a"), "");
  EXPECT_EQ(suggest_gpu("rtx-4080"), "");
}

TEST(CatalogueNames, ClosestNameReadsAtMostItsLimit) {
  // A candidate as long as the limit is still found one letter off; one byte more is refused
  // unread, however close.
  const std::string id = "org/" + std::string(kMaxTypedName - 4, 'm');
  const std::vector<std::string_view> candidates{id};
  std::string typed = id;
  typed[10] = 'n';
  EXPECT_EQ(closest_name(typed, candidates), id);
  EXPECT_EQ(closest_name(typed + "m", candidates), "");
  // Words: a run of whole words, never a piece of one; two equal candidates name neither.
  const std::vector<std::string_view> cards{"rtx-a6000", "rtx-6000-ada", "left-9-y", "rite-9-y"};
  EXPECT_EQ(closest_name("6000", cards), "rtx-6000-ada");
  EXPECT_EQ(closest_name("6000ada", cards), "rtx-6000-ada");
  EXPECT_EQ(closest_name("9y", cards), "");
  EXPECT_EQ(closest_name("ft9y", cards), "left-9-y");  // within two edits still
}

}  // namespace
}  // namespace zerodp::catalog
