// Which records a compute process of a multi-process run inserts: its own lane of the records
// after the loaded ones, so that no two processes insert the same key.
#pragma once

#include <cstdint>

namespace dmrt::bench {

// A process's InsertSequence counts its own records: the loaded ones (0 .. loaded-1, shared by
// every process), then its inserts. With `lanes` processes, the process of rank `lane` makes its
// i-th insert record loaded + i * lanes + lane: the lanes interleave, so that inserts still
// append at the right end of an ordered key space, and together they cover the records a single
// process would insert (YCSB gives each client process its own insert range for the same
// reason). Reads map through it too: a process reads the loaded records and its own
// acknowledged inserts, never a record another process may not have inserted yet.
// One process (the default): the identity.
struct InsertLanes {
  uint64_t loaded = 0;
  uint64_t lanes = 1;
  uint64_t lane = 0;

  uint64_t operator()(uint64_t local) const {
    return local < loaded ? local : loaded + (local - loaded) * lanes + lane;
  }
};

}  // namespace dmrt::bench
