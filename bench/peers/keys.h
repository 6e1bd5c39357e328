// The key rules of a local peer (bench/peers/tbb_hash.h, ...), as every index keeps them
// (dmrt/runtime/kv.h, dmrt/runtime/key_bytes.h): at key_size 8 the peer keeps its integer map and a
// byte key must be 8 bytes (key_of_bytes); above 8 it keeps a map over std::string keys, an integer
// key is key_bytes(k), and a key is 1 to key_size bytes. Anything else is a LimitError.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

class PeerKeys {
 public:
  explicit PeerKeys(uint32_t key_size) : size_(key_size) {}
  // The peer keeps std::string keys (key_size > 8).
  bool bytes() const { return size_ > kIntegerKeyBytes; }
  uint32_t key_size() const { return size_; }

  // A byte key, checked against the peer's limits.
  void check(std::string_view k) const {
    if (k.empty() || k.size() > size_ || (!bytes() && k.size() != kIntegerKeyBytes))
      throw LimitError("a key of " + std::to_string(k.size()) + " bytes on a peer of key_size " +
                       std::to_string(size_) +
                       (bytes() ? " (keys are 1 to key_size bytes)" : " (integer keys: 8 bytes)"));
  }
  // The key as the std::string the map takes, in this handle's buffer (its capacity is reused).
  const std::string& str(std::string_view k) {
    buf_.assign(k);
    return buf_;
  }
  const std::string& str(Key k) {
    buf_.resize(kIntegerKeyBytes);
    put_key_bytes(k, buf_.data());
    return buf_;
  }

 private:
  uint32_t size_;
  std::string buf_;
};

}  // namespace dmrt::bench
