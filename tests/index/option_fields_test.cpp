// Option field lists (dmrt/runtime/option_fields.h): each index's Options declares its fields once;
// ranges checked, TOML tables read with the same ranges, errors naming the field.
#include <gtest/gtest.h>

#include <string>

#include <toml++/toml.h>

#include "dmrt/indexes/chime/detail/options.h"
#include "dmrt/indexes/dmtree/detail/options.h"
#include "dmrt/indexes/hstore/detail/options.h"
#include "dmrt/indexes/race/detail/options.h"
#include "dmrt/indexes/rolex/detail/options.h"
#include "dmrt/indexes/sherman/detail/options.h"
#include "dmrt/indexes/smart/detail/options.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/option_fields.h"
#include "dmrt/runtime/option_toml.h"

namespace dmrt {
namespace {

// The message of the ConfigError that f throws ("" when it throws none).
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

template <class O>
void expect_defaults_valid(const char* name) {
  EXPECT_EQ(check_option_fields(O{}), "") << name << ": a default is outside its own range";
}

TEST(OptionFields, EveryIndexsDefaultsAreInRange) {
  expect_defaults_valid<race::Options>("race");
  expect_defaults_valid<chime::Options>("chime");
  expect_defaults_valid<sherman::Options>("sherman");
  expect_defaults_valid<dmtree::Options>("dmtree");
  expect_defaults_valid<smart::Options>("smart");
  expect_defaults_valid<rolex::Options>("rolex");
  expect_defaults_valid<hstore::Options>("hstore");
}

TEST(OptionFields, OutOfRangeNamesTheFieldAndTheRange) {
  race::Options o;
  o.groups_per_subtable = 1;
  EXPECT_EQ(check_option_fields(o), "groups_per_subtable must be in [2, 1048576] (got 1)");
  std::string err = config_error([&] { validate_option_fields("race", o); });
  EXPECT_EQ(err, "race: groups_per_subtable must be in [2, 1048576] (got 1)");
}

TEST(OptionFields, FlagNamesFollowTheKeyUnlessNamed) {
  std::string flags;
  for_each_field<race::Options>([&](const auto& f) {
    if (f.cli) flags += field_flag_suffix(f) + " ";
  });
  EXPECT_EQ(
      flags,
      "directory-cache same-slot reread-headers groups-per-subtable initial-depth max-depth ");
}

TEST(OptionFields, TomlTableSetsFields) {
  auto doc = toml::parse(R"(
    [chime]
    span = 32
    neighborhood = 4
    speculative_read = false
    cache_bytes = 1048576
  )");
  chime::Options o;
  read_option_fields(*doc["chime"].as_table(), o, "[chime]");
  EXPECT_EQ(o.span, 32u);
  EXPECT_EQ(o.neighborhood, 4u);
  EXPECT_FALSE(o.speculative_read);
  EXPECT_EQ(o.cache_bytes, uint64_t{1} << 20);
  EXPECT_TRUE(o.hopscotch_leaf);  // not named: keeps its default
  EXPECT_EQ(o.internal_span, chime::Options{}.internal_span);
}

TEST(OptionFields, TomlOutOfRangeIsRejectedNamingTheField) {
  auto doc = toml::parse("[chime]\nneighborhood = 40\n");
  chime::Options o;
  std::string err =
      config_error([&] { read_option_fields(*doc["chime"].as_table(), o, "[chime]"); });
  EXPECT_EQ(err, "[chime].neighborhood must be in [1, 16] (got 40)");
  EXPECT_EQ(o.neighborhood, chime::Options{}.neighborhood);  // unchanged

  auto neg = toml::parse("[sherman]\nspan = -3\n");
  sherman::Options s;
  err = config_error([&] { read_option_fields(*neg["sherman"].as_table(), s, "[sherman]"); });
  EXPECT_EQ(err, "[sherman].span must be in [4, 1024] (got -3)");
}

TEST(OptionFields, TomlRejectsUnknownKeysAndWrongTypes) {
  auto doc = toml::parse("[race]\nno_such_option = 1\n");
  race::Options o;
  EXPECT_EQ(config_error([&] { read_option_fields(*doc["race"].as_table(), o, "[race]"); }),
            "[race].no_such_option is not an option of this index");
  auto typed = toml::parse("[race]\ndirectory_cache = 1\n");
  EXPECT_EQ(config_error([&] { read_option_fields(*typed["race"].as_table(), o, "[race]"); }),
            "[race].directory_cache must be true or false");
  auto real = toml::parse("[rolex]\nepsilon = 1.5\n");
  rolex::Options r;
  EXPECT_EQ(config_error([&] { read_option_fields(*real["rolex"].as_table(), r, "[rolex]"); }),
            "[rolex].epsilon must be an integer");
}

// An enum field (option_choice) is spelled by its names in TOML, and a name that is none of them
// is rejected with the list.
TEST(OptionFields, TomlReadsChoicesByName) {
  auto doc = toml::parse("[sherman]\nsync = \"versions\"\n");
  sherman::Options o;
  read_option_fields(*doc["sherman"].as_table(), o, "[sherman]");
  EXPECT_EQ(o.sync, sherman::Sync::kVersions);
  auto bad = toml::parse("[chime]\nsync = \"bookends\"\n");
  chime::Options c;
  EXPECT_EQ(config_error([&] { read_option_fields(*bad["chime"].as_table(), c, "[chime]"); }),
            "[chime].sync must be one of auto | versions | checksum");
  auto num = toml::parse("[chime]\nsync = 1\n");
  EXPECT_EQ(config_error([&] { read_option_fields(*num["chime"].as_table(), c, "[chime]"); }),
            "[chime].sync must be one of auto | versions | checksum");
  EXPECT_EQ(c.sync, chime::Sync::kAuto);  // unchanged
  // Out of range (not reachable from a name) reports the choices too.
  chime::Options odd;
  odd.sync = static_cast<chime::Sync>(7);
  EXPECT_EQ(check_option_fields(odd), "sync must be one of auto | versions | checksum (got 7)");
}

TEST(OptionFields, TomlReadsFloatingPointFields) {
  auto doc = toml::parse("[hstore]\nload_factor = 0.5\noverflow_fraction = 1\n");
  hstore::Options o;
  read_option_fields(*doc["hstore"].as_table(), o, "[hstore]");
  EXPECT_DOUBLE_EQ(o.load_factor, 0.5);
  EXPECT_DOUBLE_EQ(o.overflow_fraction, 1.0);
  auto bad = toml::parse("[hstore]\nload_factor = 1.5\n");
  EXPECT_NE(config_error([&] {
              read_option_fields(*bad["hstore"].as_table(), o, "[hstore]");
            }).find("[hstore].load_factor must be in"),
            std::string::npos);
}

}  // namespace
}  // namespace dmrt
