// `chime`: CHIME, one Tree per compute node, every factor-analysis technique a --chime-* flag.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bench/adapter.h"
#include "bench/per_node.h"
#include "indexes/chime/options.h"
#include "indexes/chime/tree.h"
#include "runtime/client.h"
#include "runtime/kv.h"

namespace dmrt::bench {

// The CHIME paper's factor analysis (§5.3, Fig. 15) applies its techniques one by one, in this
// order: hopscotch leaf, vacancy-bitmap piggybacking, leaf-metadata replication, (sibling-based
// validation, always on here: it is how the tree routes) and speculative read. --chime-factor
// names a step and switches on that technique and every earlier one; the single-technique
// switches (--chime-hopscotch-leaf ...) override the step, whatever their order on the line.
struct ChimeFlags {
  static constexpr std::string_view kIndex = "chime";
  static constexpr std::string_view kTitle = "CHIME";
  static constexpr const char* kSteps[] = {"none", "hopscotch", "vacancy", "replication", "all"};

  chime::Options base;  // geometry and budgets as given (switches: see below)
  double hotspot_mb = static_cast<double>(chime::Options{}.hotspot_bytes) / (1 << 20);
  std::string factor;  // "" = not given
  std::optional<bool> hopscotch_leaf, vacancy_piggyback, metadata_replication, speculative_read;

  void add(CLI::App& g) {
    g.add_option("--chime-span", base.span, "Entries per hopscotch leaf")
        ->check(CLI::Range(2u, 1024u))
        ->capture_default_str();
    g.add_option("--chime-neighborhood", base.neighborhood, "Hopscotch neighborhood H (<= span)")
        ->check(CLI::Range(1u, 16u))
        ->capture_default_str();
    g.add_option("--chime-internal-span", base.internal_span, "Pivots per internal node")
        ->check(CLI::Range(4u, 1024u))
        ->capture_default_str();
    g.add_option("--chime-hotspot-mb", hotspot_mb,
                 "Hotspot buffer of the speculative read, MiB per compute node (16 B per entry)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    g.add_option("--chime-factor", factor,
                 "Factor analysis step (paper Fig. 15): none | hopscotch | vacancy | replication | "
                 "all; each step adds its technique to the previous ones (all = CHIME)")
        ->check(CLI::IsMember({"none", "hopscotch", "vacancy", "replication", "all"}));
    auto sw = [&g](const std::string& name, std::optional<bool>& slot, const std::string& help) {
      g.add_option_function<bool>(
           name, [&slot](const bool& v) { slot = v; }, help)
          ->type_name("on|off")
          ->default_str("on");
    };
    sw("--chime-hopscotch-leaf", hopscotch_leaf,
       "Hopscotch leaves: read one neighborhood (off: every leaf access reads the whole leaf)");
    sw("--chime-vacancy-piggyback", vacancy_piggyback,
       "Vacancy bitmap fetched by the lock's masked CAS (off: a separate READ after locking)");
    sw("--chime-metadata-replication", metadata_replication,
       "Leaf metadata replicated per neighborhood (off: a separate metadata READ)");
    sw("--chime-speculative-read", speculative_read,
       "Hotness-aware speculative single-entry read with the hotspot buffer");
  }

  std::string check() const {
    if (base.neighborhood > base.span)
      return "--chime-neighborhood (" + std::to_string(base.neighborhood) +
             ") must not exceed --chime-span (" + std::to_string(base.span) + ")";
    return {};
  }

  // The options handed to chime::Tree.
  chime::Options resolve(const IndexOptions& io) const {
    chime::Options o = base;
    o.value_size = static_cast<uint32_t>(io.value_size);
    if (io.cache_bytes) o.cache_bytes = io.cache_bytes;  // --cache-mb: per compute node
    o.hotspot_bytes = mib_to_bytes(hotspot_mb);
    if (!factor.empty()) {
      int step = 0;
      while (factor != kSteps[step]) ++step;
      o.hopscotch_leaf = step >= 1;
      o.vacancy_piggyback = step >= 2;
      o.metadata_replication = step >= 3;
      o.speculative_read = step >= 4;
    }
    if (hopscotch_leaf) o.hopscotch_leaf = *hopscotch_leaf;
    if (vacancy_piggyback) o.vacancy_piggyback = *vacancy_piggyback;
    if (metadata_replication) o.metadata_replication = *metadata_replication;
    if (speculative_read) o.speculative_read = *speculative_read;
    return o;
  }
};

template <Transport T>
struct ChimeAdapter {
  static constexpr std::string_view kName = "chime";
  static constexpr std::string_view kSummary =
      "CHIME (SOSP'24): B+ tree with cached internal nodes over hopscotch leaves, speculative "
      "reads";
  static constexpr bool kLocal = false;
  using Flags = ChimeFlags;
  using Index = PerComputeNode<T, chime::Tree<T>, chime::Options>;
  using Handle = typename chime::Tree<T>::Handle;

  static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions& io, const Flags& f) {
    auto idx = std::make_shared<Index>(f.resolve(io));
    idx->create_first(setup);
    return idx;
  }
  static nlohmann::json describe(const IndexOptions& io, const Flags& f) {
    const chime::Options o = f.resolve(io);
    nlohmann::json j = {{"span", o.span},
                        {"neighborhood", o.neighborhood},
                        {"internal_span", o.internal_span},
                        {"cache_bytes", o.cache_bytes},
                        {"hotspot_bytes", o.speculative_read ? o.hotspot_bytes : 0},
                        {"hopscotch_leaf", o.hopscotch_leaf},
                        {"vacancy_piggyback", o.vacancy_piggyback},
                        {"metadata_replication", o.metadata_replication},
                        {"speculative_read", o.speculative_read}};
    if (!f.factor.empty()) j["factor"] = f.factor;
    return j;
  }
  static Handle handle(Index& idx, Client<T>& c) { return idx.tree_for(c)->handle(c); }
  static IndexStats stats(Index& idx, Client<T>&) { return idx.merged_stats(); }
  // The internal-node cache belongs to a compute node, not to a handle: reported once per node.
  static uint64_t cache_bytes(Index&, Handle&) { return 0; }
  static uint64_t shared_cache_bytes(Index& idx) { return idx.cache_bytes(); }
};

}  // namespace dmrt::bench
