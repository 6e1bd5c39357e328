// `chime`: CHIME; its --chime-* flags come from chime::Options::fields(), plus the
// factor-analysis step and the hotspot budget in MiB.
#pragma once

#include <string>
#include <string_view>

#include "bench/spec_flags.h"
#include "indexes/chime/options.h"

namespace dmrt::bench {

struct ChimeSpec {
  static constexpr std::string_view kName = "chime";
  static constexpr std::string_view kTitle = "CHIME";
  static constexpr std::string_view kSummary =
      "CHIME (SOSP'24): B+ tree with cached internal nodes over hopscotch leaves, speculative "
      "reads";
  static constexpr bool kLocal = false;
  static constexpr bool kScan = true;
  using Options = chime::Options;

  // The CHIME paper's factor analysis (§5.3, Fig. 15) applies its techniques one by one, in
  // this order: hopscotch leaf, vacancy-bitmap piggybacking, leaf-metadata replication,
  // (sibling-based validation: on in every step, its own switch --chime-sibling-validation is
  // Fig. 16's) and speculative read.
  // --chime-factor names a step and switches on that technique and every earlier one; the
  // single-technique switches (--chime-hopscotch-leaf ...) override the step, whatever their
  // order on the line.
  struct Extras : FlagExtras<Options> {
    static constexpr const char* kSteps[] = {"none", "hopscotch", "vacancy", "replication", "all"};
    double hotspot_mb = static_cast<double>(Options{}.hotspot_bytes) / (1 << 20);
    std::string factor;  // "" = not given

    void add(CLI::App& g) {
      g.add_option("--chime-hotspot-mb", hotspot_mb,
                   "Hotspot buffer of the speculative read, MiB per compute node (16 B per entry)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
      g.add_option("--chime-factor", factor,
                   "Factor analysis step (paper Fig. 15): none | hopscotch | vacancy | "
                   "replication | all; each step adds its technique to the previous ones (all = "
                   "CHIME)")
          ->check(CLI::IsMember({"none", "hopscotch", "vacancy", "replication", "all"}));
    }
    void preset(Options& o) const {
      o.hotspot_bytes = mib_to_bytes(hotspot_mb);
      if (factor.empty()) return;
      int step = 0;
      while (factor != kSteps[step]) ++step;
      o.hopscotch_leaf = step >= 1;
      o.vacancy_piggyback = step >= 2;
      o.metadata_replication = step >= 3;
      o.speculative_read = step >= 4;
    }
    std::string check(const Options& o) const {
      if (o.neighborhood > o.span)
        return "--chime-neighborhood (" + std::to_string(o.neighborhood) +
               ") must not exceed --chime-span (" + std::to_string(o.span) + ")";
      return {};
    }
    void describe(nlohmann::json& j, const Options& o) const {
      if (!o.speculative_read) j["hotspot_bytes"] = 0;  // no buffer is allocated then
      if (!factor.empty()) j["factor"] = factor;
    }
  };

  static constexpr auto run = run_chime;  // bench/run_chime.cpp
  static constexpr auto byte_keys = byte_keys_chime;
};

}  // namespace dmrt::bench
