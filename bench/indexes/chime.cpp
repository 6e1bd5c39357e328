// dmrt-bench's CHIME (dmrt/indexes/chime): its --chime-* flags (chime::Options::fields(), plus the
// factor-analysis step and the hotspot budget in MiB), registered for every transport compiled
// in.
#include <string>

#include "bench/indexes/register.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt::bench {
namespace {

// The CHIME paper's factor analysis (§5.3, Fig. 15) applies its techniques one by one, in this
// order: hopscotch leaf, vacancy-bitmap piggybacking, leaf-metadata replication,
// (sibling-based validation: on in every step, its own switch --chime-sibling-validation is
// Fig. 16's) and speculative read. --chime-factor names a step and switches on that technique
// and every earlier one; the single-technique switches (--chime-hopscotch-leaf ...) override
// the step, whatever their order on the line.
struct ChimeExtras : FlagExtras<chime::Options> {
  static constexpr const char* kSteps[] = {"none", "hopscotch", "vacancy", "replication", "all"};
  double hotspot_mb = static_cast<double>(chime::Options{}.hotspot_bytes) / (1 << 20);
  std::string factor;  // "" = not given

  void declare(FlagList& l) {
    l.number("--chime-hotspot-mb", hotspot_mb,
             "Hotspot buffer of the speculative read, MiB per compute node (16 B per entry)", 0.0,
             1e12);
    l.choice("--chime-factor", factor, {kSteps, kSteps + 5},
             "Factor analysis step (paper Fig. 15): none | hopscotch | vacancy | replication | "
             "all; each step adds its technique to the previous ones (all = CHIME)");
  }
  void preset(chime::Options& o) const {
    o.hotspot_bytes = mib_to_bytes(hotspot_mb);
    if (factor.empty()) return;
    int step = 0;
    while (factor != kSteps[step]) ++step;
    o.hopscotch_leaf = step >= 1;
    o.vacancy_piggyback = step >= 2;
    o.metadata_replication = step >= 3;
    o.speculative_read = step >= 4;
  }
  std::string check(const chime::Options& o) const {
    if (o.neighborhood > o.span)
      return "--chime-neighborhood (" + std::to_string(o.neighborhood) +
             ") must not exceed --chime-span (" + std::to_string(o.span) + ")";
    return {};
  }
  void describe(nlohmann::json& j, const chime::Options& o) const {
    if (!o.speculative_read) j["hotspot_bytes"] = 0;  // no buffer is allocated then
    if (!factor.empty()) j["factor"] = factor;
  }
};

const RegisterDm<TreeRun<chime::Options, chime::Index>, ChimeExtras> kChime{
    {"chime", "CHIME",
     "CHIME (SOSP'24): B+ tree with cached internal nodes over hopscotch leaves, speculative "
     "reads",
     30}};

}  // namespace
}  // namespace dmrt::bench
