// Which lock holders are known dead: what a lock waiter asks before it takes over a lock that a
// crashed process left held (issue 39), and the watch that asks it only after a lease.
#pragma once

#include <cstdint>

namespace dmrt {

// Whether the process that holds client id `client` was declared dead and fenced: it writes
// nothing more, so whatever it left is final. A process that may only be slow must not be
// reported dead (bench/driver/group.h declares death after --peer-timeout-seconds and a fence).
class Liveness {
 public:
  virtual ~Liveness() = default;
  virtual bool fenced_dead(uint32_t client) const = 0;
  // For lock words with no room for a client id (ROLEX's table entries): a tag of 1 to 255 that
  // names the process holding client `client`, and whether the process a tag names is dead as
  // fenced_dead says.
  virtual uint8_t process_tag(uint32_t client) const = 0;
  virtual bool tag_dead(uint8_t tag) const = 0;
};

// A lock waiter's view of one lock word's holder. Free while the word changes; once one holder
// value has stood for `lease_ns` (transport clock), it asks the client's Liveness, and says
// whether the waiter may take the lock from that holder: by a CAS from exactly that value, so
// that of several waiters one wins, and a holder that let go meanwhile keeps its successor's lock.
class HolderWatch {
 public:
  static constexpr uint64_t kLeaseNs = 10'000'000;

  // `word`: the lock word as the failed acquire saw it; `holder`: the client id it names.
  template <class C>
  bool dead(C& c, uint64_t word, uint32_t holder) {
    return stood(c, word) && c.holder_dead(holder);
  }
  // The same for a word that names its holder's process by tag (Liveness::process_tag).
  template <class C>
  bool dead_tag(C& c, uint64_t word, uint8_t tag) {
    return tag != 0 && stood(c, word) && c.tag_dead(tag);
  }

 private:
  // Whether `word` has stood unchanged for the lease (the clock restarts when it changes).
  template <class C>
  bool stood(C& c, uint64_t word) {
    const uint64_t now = c.now_ns();
    if (word != seen_) {
      seen_ = word;
      since_ = now;
      return false;
    }
    return now - since_ >= kLeaseNs;
  }

  uint64_t seen_ = 0;
  uint64_t since_ = 0;
};

}  // namespace dmrt
