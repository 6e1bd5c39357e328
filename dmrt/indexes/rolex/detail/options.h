// ROLEX options: learned-model geometry (epsilon, leaf slots), pool sizing and typed technique
// switches.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::rolex {

// Where a port to non-coherent memory flushes (FlushHint; docs/cxl-porting.md, "Coherence"). LT
// entries (locks, retirement), slot_use, the retrain lock and the CirQ entries change only by
// atomics and a release's lock word, which the device executes, so no point writes them back; but
// every READ of them must see memory. The points hold for compute clients and the memory node's
// retraining service alike (its cache is the memory node's own): the service takes them from
// ServiceOptions::faults, the compute side from Options::faults.
enum class FlushPoint : uint8_t {
  kLeafInvalidate,   // leaf READs (searches, scans, under the lock, the retrainer's snapshots)
  kLeafWriteBack,    // leaf WRITEs are written back before the LT unlock (or the model swap)
  kTableInvalidate,  // LT/SLT READs: slot_use checks, table refreshes, the retrainer's LT reads
  kTableWriteBack,   // SLT entry WRITEs are written back before the LT unlock
  kModelInvalidate,  // group-pointer and model-object READs (model cache, retrainer, waits)
  kModelWriteBack,   // the retrainer's new model and its group-pointer swap are written back
  kQueueInvalidate,  // the retrainer's CirQ entry READs (compute clients append by CAS)
};
inline constexpr FlushPoint kFlushPoints[] = {
    FlushPoint::kLeafInvalidate, FlushPoint::kLeafWriteBack,   FlushPoint::kTableInvalidate,
    FlushPoint::kTableWriteBack, FlushPoint::kModelInvalidate, FlushPoint::kModelWriteBack,
    FlushPoint::kQueueInvalidate};
constexpr std::string_view flush_point_name(FlushPoint p) {
  switch (p) {
    case FlushPoint::kLeafInvalidate:
      return "leaf_invalidate";
    case FlushPoint::kLeafWriteBack:
      return "leaf_write_back";
    case FlushPoint::kTableInvalidate:
      return "table_invalidate";
    case FlushPoint::kTableWriteBack:
      return "table_write_back";
    case FlushPoint::kModelInvalidate:
      return "model_invalidate";
    case FlushPoint::kModelWriteBack:
      return "model_write_back";
    case FlushPoint::kQueueInvalidate:
      return "queue_invalidate";
  }
  return "?";
}
// The hint each flush point issues, all of them unless the fault switch `skip` removed some.
struct FlushHints {
  FlushHint leaf_read, leaf_write, table_read, table_write, model_read, model_write, queue_read;
  static constexpr FlushHints of(const FlushPoints<FlushPoint>& skip = {}) {
    constexpr auto kInv = FlushHint::kInvalidate;
    constexpr auto kBack = FlushHint::kWriteBack;
    return {flush_hint(skip, FlushPoint::kLeafInvalidate, kInv),
            flush_hint(skip, FlushPoint::kLeafWriteBack, kBack),
            flush_hint(skip, FlushPoint::kTableInvalidate, kInv),
            flush_hint(skip, FlushPoint::kTableWriteBack, kBack),
            flush_hint(skip, FlushPoint::kModelInvalidate, kInv),
            flush_hint(skip, FlushPoint::kModelWriteBack, kBack),
            flush_hint(skip, FlushPoint::kQueueInvalidate, kInv)};
  }
};

struct Options {
  uint32_t value_size = 8;   // bytes per value, stored inline in the leaf (zero-padded)
  uint32_t epsilon = 16;     // PLR error bound (positions); paper default 16
  uint32_t leaf_slots = 16;  // delta: pairs per fixed-size leaf; paper default 16
  // Bulk load: model groups (bottom model + LT/SLT) start at the segments of a PLR trained over
  // all keys, as the paper's models do (§3.2); a segment longer than max_group_leaves leaves is
  // cut (bounds the cost of retraining a group). Off: a group every group_leaves leaves.
  bool plr_groups = true;
  uint32_t max_group_leaves = 256;
  uint32_t group_leaves = 64;        // bulk load without plr_groups: trained leaves per model group
  double fill = 1.0;                 // bulk load: fraction of each leaf filled at training time
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
  // Leaves with consecutive numbers in one search or scan batch are one READ (§4.2: "via one RDMA
  // READ"; the leaf region is contiguous, Eq. 3); off: one READ per leaf, doorbell-batched (§3.4).
  bool coalesce_leaf_reads = true;
  // A key's group is found through upper models trained over the groups' smallest keys, with a
  // search bounded by their error (§3.2, PGM-style levels); off: a binary search of all group keys.
  bool upper_models = true;
  // Under the lock a writer reads its chain's leaves (named by the cached tables; a leaf whose
  // `next` disagrees costs one more round trip for the table), as the paper's does (§3.4); on:
  // it also reads the whole 2 KiB synonym table with them.
  bool read_slt_under_lock = false;
  // A delete that empties a synonym leaf unlinks it from its chain, as the paper's does (§3.4);
  // off: empty synonyms stay linked until the next retraining drops them.
  bool unlink_empty_synonyms = true;
  // dmrt-bench only: the load phase bulk loads its keys (create with the keys: leaves packed,
  // models trained), as the paper loads before its workloads; off: it inserts them one by one
  // into an index of initial_groups empty groups.
  bool bulk_load = true;
  // Read delegation and write combining (RDWC, from SMART; dmrt/indexes/common/rdwc.h): concurrent
  // searches of one key on a compute node share one search, concurrent updates one write. Not
  // in the ROLEX paper (off); the CHIME paper's evaluation applies it to ROLEX ("for fairness,
  // RDWC ... applied to all competitors"), so its reproduction specs switch it on.
  bool rdwc = false;
  // Variable-length items (CHIME's ROLEX-Indirect, its Fig. 13; the ROLEX paper's footnote: "8B
  // pointers for variable-length values"): a leaf pair holds the key and an 8-byte pointer
  // (block length, address) to an out-of-leaf KV block holding the value
  // (dmrt/indexes/common/kv_block.h). A search reads the leaves, then the block (one more round
  // trip); an insert or update writes a new block in the lock's round trip and the pointer with the
  // leaf (out of place). off: values inline (value_size).
  bool indirect = false;
  // Lock sharing inside a compute node (§3.4: "other threads of C_node can leverage the acquired
  // lock to modify the same leaves"): a writer queues in its compute node's local lock table
  // (dmrt/indexes/common/local_lock_table.h) before the chain's LT entry, and a holder with local
  // waiters hands the remote lock over instead of releasing it (at most handover_max times in a
  // row, so other compute nodes are not starved). Off: every writer CASes the LT entry itself.
  bool lock_sharing = true;
  uint32_t handover_max = 8;
  // No memory-node retraining (a CXL memory expander has no CPU; docs/cxl-porting.md): the
  // compute client whose insert brings a group's synonym table to the retraining threshold
  // retrains the group itself, right after its insert, instead of queueing it for the memory
  // node. dmrt-bench then hosts no retraining service. Off: the paper's design (§3.5).
  bool retrain_on_compute = false;
  bool compute_retrain_fallback =
      false;  // a compute node retrains a full group itself when no
              // memory-node service has done so (no service: sim, tests)
  uint64_t full_slt_wait_ns = 2'000'000'000ull;  // wait for the service on a full SLT, then fail
  // Test-only faults that prove the checkers can fail; compiled out without
  // DMRT_FAULT_INJECTION (dmrt/indexes/common/faults.h). Never set them elsewhere.
  struct Faults {
    bool skip_validation = false;        // accept leaves whose checksum does not match
    bool ack_without_write = false;      // insert returns true without writing the entry
    bool skip_slot_use_check = false;    // ignore slot_use changes (stale synonym tables)
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
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
      option_number("max_group_leaves", &Options::max_group_leaves,
                    "Bulk load: most trained leaves in a model group cut at the PLR's segments", 1u,
                    1u << 24),
      option_number("group_leaves", &Options::group_leaves,
                    "Bulk load without PLR groups: trained leaves per model group", 1u, 1u << 24),
      option_switch("plr_groups", &Options::plr_groups,
                    "Bulk load cuts model groups at the segments of a PLR over all keys, as the "
                    "paper's models (off: every group_leaves leaves)"),
      option_switch("upper_models", &Options::upper_models,
                    "Find a key's model group through upper models trained over the groups' "
                    "smallest keys (off: a binary search of all group keys)"),
      option_switch("read_slt_under_lock", &Options::read_slt_under_lock,
                    "Writers read the whole 2 KiB synonym table with their chain under the lock "
                    "(off: the chain's leaves only, as the paper)"),
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
      option_switch("coalesce_leaf_reads", &Options::coalesce_leaf_reads,
                    "Adjacent leaves of a search or scan are one READ (paper 4.2; off: one READ "
                    "per leaf in the doorbell batch, 3.4)"),
      option_switch("unlink_empty_synonyms", &Options::unlink_empty_synonyms,
                    "A delete that empties a synonym leaf unlinks it from its chain (off: it "
                    "stays until the next retraining)"),
      option_switch("bulk_load", &Options::bulk_load,
                    "dmrt-bench: the load phase bulk loads its keys and trains the models (off: "
                    "inserts them into evenly cut empty groups)"),
      option_switch("indirect", &Options::indirect,
                    "Variable-length items: leaf pairs hold a pointer to an out-of-leaf KV block "
                    "(ROLEX-Indirect; one more round trip per search; off: values inline)"),
      option_switch("rdwc", &Options::rdwc,
                    "Read delegation and write combining (SMART's, as the CHIME paper applies "
                    "it): concurrent same-key searches (updates) on a compute node share one "
                    "search (write)"),
      option_switch("lock_sharing", &Options::lock_sharing,
                    "Writers of one compute node share an acquired chain lock: a local queue per "
                    "LT entry, the remote lock handed to the next local writer (paper 3.4; off: "
                    "every writer CASes the LT entry)"),
      option_number("handover_max", &Options::handover_max,
                    "Lock sharing: consecutive local hand-overs before the remote lock is "
                    "released",
                    1u, 1u << 20),
      option_switch("retrain_on_compute", &Options::retrain_on_compute,
                    "No memory-node retraining: the compute client that brings a group's synonym "
                    "table to the threshold retrains the group itself (a CXL expander has no "
                    "CPU; off: the memory node retrains, as the paper)"),
      option_switch("compute_retrain_fallback", &Options::compute_retrain_fallback,
                    "A compute node retrains a full group itself when no memory-node service "
                    "does (the bench decides from the transport)")
          .no_flag());
}

}  // namespace dmrt::rolex
