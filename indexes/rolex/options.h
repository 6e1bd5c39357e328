// ROLEX options: learned-model geometry (epsilon, leaf slots), pool sizing and typed technique
// switches.
#pragma once

#include <cstdint>
#include <limits>

#include "indexes/common/root_slots.h"
#include "runtime/option_fields.h"

namespace dmrt::rolex {

struct Options {
  uint32_t value_size = 8;     // bytes per value, stored inline in the leaf (zero-padded)
  uint32_t epsilon = 16;       // PLR error bound (positions); paper default 16
  uint32_t leaf_slots = 16;    // delta: pairs per fixed-size leaf; paper default 16
  uint32_t group_leaves = 64;  // bulk load: trained leaves per model group (bottom model + LT/SLT)
  double fill = 1.0;           // bulk load: fraction of each leaf filled at training time
  uint32_t retrain_threshold = 128;  // SLT slots used when the group is queued for retraining (2^7)
  uint64_t max_leaves = 0;      // leaf region capacity (FAA-allocated leaves); 0 = sized from keys
  uint64_t expected_keys = 0;   // sizing hint for max_leaves (keys the index will hold at most)
  uint32_t initial_groups = 1;  // empty create: model groups splitting [0, key_space) evenly
  uint64_t key_space = 0;       // empty create: keys expected in [0, key_space); 0 = 2^64
  uint32_t cirq_slots = 4096;   // retraining queue (CirQ) entries
  unsigned root_slot = root_slots::kRolex;  // layout::root_slot on the index's memory node
  // Technique switches (paper steps and the digest's choices, for the ablation).
  bool fetch_before_lock = true;  // insert/update/delete: a search before locking (paper step 1)
  bool combine_lock_and_read = false;  // post the lock CAS and the chain re-read in one batch (A16)
  // Searches read every chain of L_range in their one batch, as the paper's do (§3.4; off: only the
  // owner chain that the cached boundaries name, about a quarter of the bytes).
  bool read_whole_range = true;
  // A delete that empties a synonym leaf unlinks it from its chain, as the paper's does (§3.4);
  // off: empty synonyms stay linked until the next retraining drops them.
  bool unlink_empty_synonyms = true;
  bool compute_retrain_fallback =
      false;  // a compute node retrains a full group itself when no
              // memory-node service has done so (no service: sim, tests)
  uint64_t full_slt_wait_ns = 2'000'000'000ull;  // wait for the service on a full SLT, then fail
  // Test-only faults that prove the checkers can fail; compiled out without
  // DMRT_FAULT_INJECTION (indexes/common/faults.h). Never set them elsewhere.
  struct Faults {
    bool skip_validation = false;      // accept leaves whose checksum does not match
    bool ack_without_write = false;    // insert returns true without writing the entry
    bool skip_slot_use_check = false;  // ignore slot_use changes (stale synonym tables)
  } faults;

  // The fields a user sets (bench flags --rolex-*, JSON, TOML), each declared once.
  static constexpr auto fields();
};

constexpr auto Options::fields() {
  return option_fields(
      option_number("epsilon", &Options::epsilon, "PLR error bound epsilon (positions)", 1u,
                    1u << 20),
      option_number("leaf_slots", &Options::leaf_slots, "Pairs per fixed-size leaf (delta)", 2u,
                    1024u),
      option_number("retrain_threshold", &Options::retrain_threshold,
                    "Synonym-table slots in use at which a model group is queued for retraining",
                    1u, 254u),
      option_number("cirq_slots", &Options::cirq_slots, "Retraining queue (CirQ) entries", 1u,
                    1u << 24),
      option_number("initial_groups", &Options::initial_groups,
                    "Model groups the empty index starts with, splitting the key space evenly "
                    "(bench default: one per ~1000 expected keys)",
                    1u, 1u << 24),
      option_number("key_space", &Options::key_space,
                    "Keys expected in [0, key_space) at an empty create (0: 2^64)", uint64_t{0},
                    std::numeric_limits<uint64_t>::max())
          .no_flag(),
      option_switch("fetch_before_lock", &Options::fetch_before_lock,
                    "Writes search before locking (paper step 1; off: lock first)"),
      option_switch("combine_lock_and_read", &Options::combine_lock_and_read,
                    "Post the lock CAS and the chain re-read in one batch (one round trip less "
                    "per write)"),
      option_switch("read_whole_range", &Options::read_whole_range,
                    "Searches read every chain of the model's error range, as the paper does "
                    "(off: only the owner chain the cached boundaries name)"),
      option_switch("unlink_empty_synonyms", &Options::unlink_empty_synonyms,
                    "A delete that empties a synonym leaf unlinks it from its chain (off: it "
                    "stays until the next retraining)"),
      option_switch("compute_retrain_fallback", &Options::compute_retrain_fallback,
                    "A compute node retrains a full group itself when no memory-node service "
                    "does (the bench decides from the transport)")
          .no_flag());
}

}  // namespace dmrt::rolex
