// Every root slot (layout::root_slot) an index or memory-node service uses by default, in one
// list, so that no two indexes collide when they share a pool and no default is written twice.
#pragma once

#include <array>
#include <cstddef>

#include "dmrt/runtime/collab/slots.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::root_slots {

// All on the first memory node unless an index's options say otherwise. Unlisted slots are free
// for tests and embedders (tests/verbs/remote_check.cpp uses 60..62 for its own words).
inline constexpr unsigned kRace = 1;     // RACE directory
inline constexpr unsigned kChime = 8;    // CHIME root word
inline constexpr unsigned kSherman = 9;  // Sherman root word
// Sherman's on-chip lock table: on EVERY memory node, the device-memory address of that node's
// table (dmrt/runtime/address.h).
inline constexpr unsigned kShermanLocks = 17;
inline constexpr unsigned kDmtreeRoot = 10;  // DMTree B+-tree root word
inline constexpr unsigned kDmtreeMeta = 15;  // DMTree descriptor (leaf arena)
inline constexpr unsigned kRolex = 12;       // ROLEX meta; its retraining service reads it too
inline constexpr unsigned kHstore = 16;      // HStore meta; its HTS and SLS servers read it too
inline constexpr unsigned kSmart = 18;       // SMART root slot word (the root node's entry)
inline constexpr unsigned kLinprobe = 19;    // linprobe table (docs/new-index.md's example)
// The collaborative service DMTree runs (the runtime owns these defaults).
inline constexpr unsigned kCollabMembership = collab::kDefaultMembershipSlot;
inline constexpr unsigned kCollabCounter = collab::kDefaultCounterSlot;
inline constexpr unsigned kCollabDescriptor = collab::kDefaultDescriptorSlot;

inline constexpr std::array kAll{
    kRace,   kChime, kSherman,  kShermanLocks,     kDmtreeRoot,    kDmtreeMeta,      kRolex,
    kHstore, kSmart, kLinprobe, kCollabMembership, kCollabCounter, kCollabDescriptor};

// Compile-time proof that the defaults fit the region header and that no two share a slot.
constexpr bool all_distinct_and_in_range() {
  for (size_t i = 0; i < kAll.size(); ++i) {
    if (kAll[i] >= layout::kRootSlots) return false;
    for (size_t j = i + 1; j < kAll.size(); ++j)
      if (kAll[i] == kAll[j]) return false;
  }
  return true;
}
static_assert(all_distinct_and_in_range(),
              "two default root slots collide, or one is past layout::kRootSlots");

}  // namespace dmrt::root_slots
