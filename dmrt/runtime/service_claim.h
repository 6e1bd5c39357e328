// One host per service instance: a claim on two pool words (owner, heartbeat) that every host of
// the service takes before it serves, so that a second host of a running service is refused and a
// replacement for a dead one takes over after a lease.
#pragma once

#include <unistd.h>
#include <cstdint>
#include <random>
#include <string>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"

namespace dmrt {

// A second host for a service that a live host already serves.
class ServiceConflict : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

struct ClaimTiming {
  uint64_t beat_ns = 100'000'000;     // the owner bumps its heartbeat this often
  uint64_t lease_ns = 2'000'000'000;  // a heartbeat unchanged this long is a dead owner's
};

// The words are `owner` (0: free, else the owner's random token) and `owner + 8` (the owner's
// heartbeat counter), reserved by the index for this service. Only pool words are used, no kernel
// object, so the claim works across processes and hosts on every transport.
//
// A live owner bumps the heartbeat from its serving loop (beat()); a contender that sees it change
// knows the owner is alive and refuses to serve. One whose beat stays unchanged for the lease is
// taken to be dead (killed, or its host gone): the contender swaps its token for the owner's with a
// CAS and serves, and the old owner, should it wake, finds the token changed at its next beat and
// stops. The lease must exceed the longest pause between two beat() calls of a live owner.
template <Transport T>
class ServiceClaim {
 public:
  ServiceClaim(GlobalAddress owner, std::string what, ClaimTiming t = {})
      : owner_(owner), beat_{owner.node(), owner.offset() + 8}, what_(std::move(what)), t_(t) {
    std::random_device rd;
    token_ = mix64((uint64_t{rd()} << 32) ^ rd() ^ (uint64_t(::getpid()) << 40)) | 1;
  }

  // Takes the claim; false if `stop()` became true first. Throws ServiceConflict when a live host
  // holds it. Polls the words every quarter beat (transport clock), pausing in between.
  template <class Stop>
  bool acquire(Client<T>& c, Stop&& stop) {
    uint64_t seen = 0, beat0 = 0, since = 0;
    // Watch the owner `o` afresh: its heartbeat now, and when we started looking.
    auto watch = [&](uint64_t o) {
      seen = o;
      if (o == 0) return;
      beat0 = c.template read_value<uint64_t>(beat_, kSee);
      since = c.now_ns();
    };
    watch(c.cas(owner_, 0, token_));
    while (seen != 0) {
      for (uint64_t t = c.now_ns(); c.now_ns() - t < t_.beat_ns / 4;) {
        if (stop()) return false;
        c.pause();
      }
      const uint64_t o = c.template read_value<uint64_t>(owner_, kSee);
      if (o == 0) {  // the owner let go meanwhile
        watch(c.cas(owner_, 0, token_));
      } else if (o != seen) {  // another contender won
        watch(o);
      } else if (c.template read_value<uint64_t>(beat_, kSee) != beat0) {
        throw ServiceConflict(what_ +
                              " is already served by another host (its heartbeat advances): a "
                              "second host for it is refused");
      } else if (c.now_ns() - since >= t_.lease_ns) {
        const uint64_t prev = c.cas(owner_, seen, token_);
        took_over_ = prev == seen;
        watch(took_over_ ? 0 : prev);
      }
    }
    held_ = true;
    last_ = c.now_ns();
    c.write(beat_, &++beats_, 8, FlushHint::kWriteBack);
    return true;
  }

  // From the serving loop, as often as it likes: every beat_ns it bumps the heartbeat and checks
  // that the claim is still its own. Throws when another host took it over (this one was taken
  // for dead: it must stop serving).
  void beat(Client<T>& c) {
    if (!held_ || c.now_ns() - last_ < t_.beat_ns) return;
    last_ = c.now_ns();
    c.write(beat_, &++beats_, 8, FlushHint::kWriteBack);
    if (c.template read_value<uint64_t>(owner_, kSee) != token_) {
      held_ = false;
      throw ServiceConflict(what_ + ": another host took the service over after this one's " +
                            "heartbeat stopped for " + std::to_string(t_.lease_ns / 1000000) +
                            " ms; this host stops serving");
    }
  }

  // On a clean stop: frees the claim for a later host at once (no lease to wait for).
  void release(Client<T>& c) noexcept {
    if (!held_) return;
    held_ = false;
    try {
      c.cas(owner_, token_, 0);
    } catch (...) {  // the pool is gone: nobody needs the claim any more
    }
  }

  bool held() const { return held_; }

  bool took_over() const { return took_over_; }  // the claim was a dead host's

 private:
  // The words are another host's (memory no host keeps coherent: docs/cxl-porting.md): every
  // READ of them sees memory and every heartbeat is written back, whatever the index's flush
  // points. Rare (a few per beat), so never worth a switch.
  static constexpr FlushHint kSee = FlushHint::kInvalidate;
  GlobalAddress owner_, beat_;
  std::string what_;
  ClaimTiming t_;
  uint64_t token_ = 0;
  uint64_t beats_ = 0;
  uint64_t last_ = 0;
  bool held_ = false;
  bool took_over_ = false;
};

}  // namespace dmrt
