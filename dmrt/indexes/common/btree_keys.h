// B+-tree key policies: how a node stores a key in its fixed-size key slot and orders keys.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::btree {

// A policy gives the tree core and the leaves: Key (a key as a decoded node holds it), View (a key
// as an operation passes it; cheap to copy), words() (8-byte words of a key slot), put/get (a
// slot's words from and to a View), view(Key), and is_min (the -inf low fence of the leftmost
// nodes). Nodes stay fixed-size in both, so a lock-free read still validates with the node's
// checksum or versions.

// Integer keys: one word per slot, 0 is -inf. Today's layout, bit for bit.
struct IntKeys {
  using Key = dmrt::Key;
  using View = dmrt::Key;
  static constexpr bool kBytes = false;
  static constexpr uint32_t words() { return 1; }
  static void put(uint64_t* w, View k) { w[0] = k; }
  static View get(const uint64_t* w) { return w[0]; }
  static View view(const Key& k) { return k; }
  static bool is_min(View k) { return k == 0; }
};

// Byte-string keys of 1..size bytes, each in a slot of words() words: the bytes zero-padded to
// size, then (in the slot's last two bytes) the length, big-endian. The empty key is -inf (the
// leftmost nodes' low fence, and an empty leaf entry). Keys decode to std::string only where a
// node is decoded for the cache (internal nodes); leaves read keys in place (get() is a view into
// the image), so an operation allocates no key.
struct ByteKeys {
  using Key = std::string;
  using View = std::string_view;
  static constexpr bool kBytes = true;
  uint32_t size = 8;  // key_size: the longest key, in bytes
  uint32_t words() const { return (size + 2 + 7) / 8; }
  void put(uint64_t* w, View k) const {
    char* p = reinterpret_cast<char*>(w);
    const size_t bytes = size_t{words()} * 8;
    if (!k.empty()) std::memmove(p, k.data(), k.size());  // k may view this slot (a reseal)
    std::memset(p + k.size(), 0, bytes - 2 - k.size());
    p[bytes - 2] = static_cast<char>(k.size() >> 8);
    p[bytes - 1] = static_cast<char>(k.size() & 0xff);
  }
  // A torn (not yet validated) slot may hold any length: clamp it, the caller's validation
  // rejects the image.
  View get(const uint64_t* w) const {
    const char* p = reinterpret_cast<const char*>(w);
    const size_t bytes = size_t{words()} * 8;
    size_t n = size_t{static_cast<uint8_t>(p[bytes - 2])} << 8 | static_cast<uint8_t>(p[bytes - 1]);
    return View(p, n <= size ? n : size);
  }
  static View view(const Key& k) { return k; }
  static bool is_min(View k) { return k.empty(); }
};

}  // namespace dmrt::btree
