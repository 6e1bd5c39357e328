// What main.cpp hands the run side of the chosen index (bench/indexes/NAME.cpp): the run request
// and the index's options as the command line resolved them. Nothing here parses a command line, so
// that the run side compiles without CLI11 (whose header alone costs seconds per translation unit).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "bench/cli/option_json.h"
#include "bench/indexes/adapter.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt {
class ClusterConfig;
}

namespace dmrt::bench {

struct Options;
struct Mix;

// One run as main.cpp hands it to the chosen index.
struct RunRequest {
  std::string_view transport;  // --transport NAME, one of dmrt/policies/transports.h's
  std::string_view index;      // its --index name
  const Options& opt;
  const ClusterConfig& config;
  const Mix& mix;
};

// An index's --<index>-* flags as parsed (DmFlags, bench/indexes/register.h).
template <class O>
class FlagResolver {
 public:
  virtual ~FlagResolver() = default;
  // The bench's defaults for the index (what --help shows), before its sizing is applied.
  virtual O defaults() const = 0;
  // The options the index runs with: `base` (the bench's sizing applied to defaults()), the
  // preset, the fields given, then what derives from them.
  virtual O resolve(O base, const IndexOptions&) const = 0;
  // The spec's additions to "index_options".
  virtual void describe(nlohmann::json&, const O&) const = 0;
};

// No flag given: the index's own defaults (for programs and tests that run an adapter without a
// command line).
template <class O>
class NoFlagsGiven final : public FlagResolver<O> {
 public:
  O defaults() const override { return O{}; }
  O resolve(O base, const IndexOptions&) const override { return base; }
  void describe(nlohmann::json&, const O&) const override {}
};

}  // namespace dmrt::bench
