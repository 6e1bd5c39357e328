// The --rolex-* flags of dmrt-bench: ROLEX's model geometry and technique switches.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bench/adapter.h"
#include "indexes/rolex/options.h"

namespace dmrt::bench {

// Kept apart from bench/index_rolex.h (the adapter) so that the flags, --help and their
// validation exist in every build; the adapter takes them through
//   using Flags = RolexFlags;
//   create(Client<T>&, const IndexOptions&, const RolexFlags&)   calls f.apply(ro) on its options
//   describe(const IndexOptions&, const RolexFlags&)              returns RolexFlags::describe(ro)
// Until the adapter does, the runner refuses these flags with a usage error rather than ignore
// them.
struct RolexFlags {
  static constexpr std::string_view kIndex = "rolex";
  static constexpr std::string_view kTitle = "ROLEX";

  // dmrt-bench's defaults: the index's own, except the retraining threshold. A bench load arrives
  // as inserts into groups trained on nothing, so every key lands in a synonym leaf; retraining
  // once 16 SLT slots are in use (not the full 128) keeps searches at a few leaves instead of ~90.
  rolex::Options base = [] {
    rolex::Options o;
    o.retrain_threshold = 16;
    return o;
  }();
  std::optional<uint32_t> initial_groups;  // default: the adapter's, from the expected keys

  void add(CLI::App& g) {
    g.add_option("--rolex-epsilon", base.epsilon, "PLR error bound epsilon (positions)")
        ->check(CLI::Range(1u, 1u << 20))
        ->capture_default_str();
    g.add_option("--rolex-leaf-slots", base.leaf_slots, "Pairs per fixed-size leaf (delta)")
        ->check(CLI::Range(2u, 1024u))
        ->capture_default_str();
    g.add_option("--rolex-retrain-threshold", base.retrain_threshold,
                 "Synonym-table slots in use at which a model group is queued for retraining")
        ->check(CLI::Range(1u, 254u))
        ->capture_default_str();
    g.add_option("--rolex-cirq-slots", base.cirq_slots, "Retraining queue (CirQ) entries")
        ->check(CLI::Range(1u, 1u << 24))
        ->capture_default_str();
    g.add_option_function<uint32_t>(
         "--rolex-initial-groups", [this](const uint32_t& v) { initial_groups = v; },
         "Model groups the empty index starts with, splitting the key space evenly (default: one "
         "per ~1000 expected keys)")
        ->check(CLI::Range(1u, 1u << 24));
    add_switch(g, "--rolex-fetch-before-lock", base.fetch_before_lock,
               "Writes search before locking (paper step 1; off: lock first)");
    add_switch(
        g, "--rolex-combine-lock-and-read", base.combine_lock_and_read,
        "Post the lock CAS and the chain re-read in one batch (one round trip less per write)");
    add_switch(g, "--rolex-read-whole-range", base.read_whole_range,
               "Searches read every chain of the model's error range, as the paper does (off: only "
               "the owner chain)");
  }
  std::string check() const { return {}; }

  // Applies the flags to options whose sizing (value_size, expected_keys, key_space,
  // initial_groups) the adapter has already set; an explicit --rolex-initial-groups wins.
  void apply(rolex::Options& ro) const {
    ro.epsilon = base.epsilon;
    ro.leaf_slots = base.leaf_slots;
    ro.retrain_threshold = base.retrain_threshold;
    ro.cirq_slots = base.cirq_slots;
    ro.fetch_before_lock = base.fetch_before_lock;
    ro.combine_lock_and_read = base.combine_lock_and_read;
    ro.read_whole_range = base.read_whole_range;
    if (initial_groups) ro.initial_groups = *initial_groups;
  }

  static nlohmann::json describe(const rolex::Options& ro) {
    return {{"epsilon", ro.epsilon},
            {"leaf_slots", ro.leaf_slots},
            {"retrain_threshold", ro.retrain_threshold},
            {"cirq_slots", ro.cirq_slots},
            {"initial_groups", ro.initial_groups},
            {"key_space", ro.key_space},
            {"fetch_before_lock", ro.fetch_before_lock},
            {"combine_lock_and_read", ro.combine_lock_and_read},
            {"read_whole_range", ro.read_whole_range},
            {"compute_retrain_fallback", ro.compute_retrain_fallback}};
  }
};

// Binds RolexFlags to the rolex adapter while bench/index_rolex.h does not declare them itself.
template <Transport T>
struct RolexAdapter;
template <Transport T>
requires(!requires { typename RolexAdapter<T>::Flags; }) struct FlagsOfImpl<RolexAdapter<T>> {
  using type = RolexFlags;
};

}  // namespace dmrt::bench
