// A B+-tree index over integer or byte-string keys: the BasicTree picked by Options::key_size.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/indexes/common/btree_keys.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/transport.h"

namespace dmrt::btree {

// Integer keys (Options::key_size 8, every index's default) or byte-string keys up to key_size
// bytes, chosen when the tree is built: it holds one Basic<T, IntKeys> or one Basic<T, ByteKeys>
// and forwards each operation to it. The integer path is Basic<T, IntKeys> unchanged: one
// predicted branch, no virtual call, no allocation. Integer keys on a byte-key tree are
// key_bytes(k) (big-endian: same order); byte keys on an integer tree must be 8 bytes
// (key_of_bytes).
//
// Self is the index's Tree<T>, derived from this, naming itself in errors (Self::kName) and adding
// what only that index has through visit(); Self::Handle is this Handle or a class derived from
// it. Self is what create(), attach() and handle() return.
template <Transport T, template <Transport, class> class Basic, class Self>
class KeyedTree {
  // f(*i) if i holds the integer tree (or its handle: the predicted branch), else f(*b).
  template <class I, class B, class F>
  static decltype(auto) either(I& i, B& b, F&& f) {
    if (i) [[likely]]
      return f(*i);
    return f(*b);
  }

 public:
  using IntTree = Basic<T, IntKeys>;
  using ByteTree = Basic<T, ByteKeys>;
  using Options = typename IntTree::Options;

  static std::shared_ptr<Self> create(Client<T>& c, const Options& o) { return open(c, o, false); }
  static std::shared_ptr<Self> attach(Client<T>& c, const Options& o) { return open(c, o, true); }

  class Handle {
   public:
    bool search(Key k, std::string& out) {
      return on_key(k, [&](auto& h, auto key) { return h.search(key, out); });
    }
    bool insert(Key k, std::string_view v) {
      return on_key(k, [&](auto& h, auto key) { return h.insert(key, v); });
    }
    bool update(Key k, std::string_view v) {
      return on_key(k, [&](auto& h, auto key) { return h.update(key, v); });
    }
    bool remove(Key k) {
      return on_key(k, [](auto& h, auto key) { return h.remove(key); });
    }
    void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) {
      if (i_) [[likely]]
        return i_->scan(from, count, rows);
      char kb[8];
      put_key_bytes(from, kb);
      b_->scan(std::string_view(kb, 8), count, brows_);
      rows.clear();
      for (auto& [k, v] : brows_) {
        if (k.size() != kIntegerKeyBytes)
          throw LimitError(std::string(Self::kName) + ": an integer scan met a key of " +
                           std::to_string(k.size()) + " bytes");
        rows.emplace_back(key_of_bytes(k), std::move(v));
      }
    }

    bool search(std::string_view k, std::string& out) {
      return on_bytes(k, [&](auto& h, auto key) { return h.search(key, out); });
    }
    bool insert(std::string_view k, std::string_view v) {
      return on_bytes(k, [&](auto& h, auto key) { return h.insert(key, v); });
    }
    bool update(std::string_view k, std::string_view v) {
      return on_bytes(k, [&](auto& h, auto key) { return h.update(key, v); });
    }
    bool remove(std::string_view k) {
      return on_bytes(k, [](auto& h, auto key) { return h.remove(key); });
    }
    // `from` may be empty (every key is >= it) or up to key_size bytes.
    void scan(std::string_view from, size_t count,
              std::vector<std::pair<std::string, std::string>>& rows) {
      if (b_) {
        if (from.size() > key_size_) checked(from);
        return b_->scan(from, count, rows);
      }
      i_->scan(from.empty() ? Key{0} : integer(from), count, irows_);
      rows.clear();
      for (auto& [k, v] : irows_) rows.emplace_back(key_bytes(k), std::move(v));
    }

    Client<T>& client() {
      return visit([](auto& h) -> Client<T>& { return h.client(); });
    }

    // f(the IntTree::Handle or the ByteTree::Handle this handle holds).
    template <class F>
    decltype(auto) visit(F&& f) {
      return either(i_, b_, f);
    }
    template <class F>
    decltype(auto) visit(F&& f) const {
      return either(i_, b_, f);
    }
    // The handle of the one tree, or null if the tree has the other key policy.
    typename IntTree::Handle* ints() { return i_ ? &*i_ : nullptr; }
    typename ByteTree::Handle* bytes() { return b_ ? &*b_ : nullptr; }

   private:
    friend class KeyedTree;
    // f(handle, k as that tree's key): k (integer tree) or its 8 bytes (byte tree).
    template <class F>
    bool on_key(Key k, F&& f) {
      if (i_) [[likely]]
        return f(*i_, k);
      char kb[8];
      put_key_bytes(k, kb);
      return f(*b_, std::string_view(kb, 8));
    }
    // f(handle, k as that tree's key): k checked against key_size (byte tree) or as an integer.
    template <class F>
    bool on_bytes(std::string_view k, F&& f) {
      if (b_) return f(*b_, checked(k));
      return f(*i_, integer(k));
    }
    std::string_view checked(std::string_view k) const {
      if (k.empty() || k.size() > key_size_)
        throw LimitError(std::string(Self::kName) + ": key of " + std::to_string(k.size()) +
                         " bytes; this tree takes 1 to " + std::to_string(key_size_));
      return k;
    }
    Key integer(std::string_view k) const {
      if (k.size() != kIntegerKeyBytes)
        throw LimitError(std::string(Self::kName) + ": key of " + std::to_string(k.size()) +
                         " bytes; this tree has integer keys (key_size 8): 8-byte keys only");
      return key_of_bytes(k);
    }
    std::optional<typename IntTree::Handle> i_;
    std::optional<typename ByteTree::Handle> b_;
    uint32_t key_size_ = kIntegerKeyBytes;
    std::vector<std::pair<std::string, std::string>> brows_;  // integer scans of a byte tree
    std::vector<std::pair<Key, std::string>> irows_;          // byte scans of an integer tree
  };

  // A Self::Handle (deduced: Self is incomplete where this class is instantiated).
  auto handle(Client<T>& c) {
    typename Self::Handle h;
    Handle& base = h;
    if (i_)
      base.i_.emplace(i_->handle(c));
    else
      base.b_.emplace(b_->handle(c));
    base.key_size_ = options().key_size;
    return h;
  }

  IndexStats stats(Client<T>& c) {
    return visit([&](auto& t) { return t.stats(c); });
  }
  IndexStats stats() {
    return visit([](auto& t) { return t.stats(); });
  }
  uint64_t cache_bytes() const {
    return visit([](auto& t) { return t.cache_bytes(); });
  }
  const Options& options() const {
    return visit([](auto& t) -> const Options& { return t.options(); });
  }
  decltype(auto) geometry() const {
    return visit([](auto& t) -> decltype(auto) { return t.geometry(); });
  }

  // f(the IntTree or the ByteTree this index holds).
  template <class F>
  decltype(auto) visit(F&& f) {
    return either(i_, b_, f);
  }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return either(i_, b_, [&](auto& t) -> decltype(auto) { return f(std::as_const(t)); });
  }
  // The one tree, or null if this index has the other key policy.
  IntTree* ints() const { return i_.get(); }
  ByteTree* bytes() const { return b_.get(); }

 protected:
  KeyedTree() = default;

 private:
  // The tree of the key kind o names, created or attached.
  [[gnu::noinline]] static std::shared_ptr<Self> open(Client<T>& c, const Options& o, bool attach) {
    auto t = std::shared_ptr<Self>(new Self());
    if (o.key_size == kIntegerKeyBytes)
      t->i_ = attach ? IntTree::attach(c, o) : IntTree::create(c, o);
    else
      t->b_ = attach ? ByteTree::attach(c, o) : ByteTree::create(c, o);
    return t;
  }

  std::shared_ptr<IntTree> i_;
  std::shared_ptr<ByteTree> b_;
};

}  // namespace dmrt::btree
