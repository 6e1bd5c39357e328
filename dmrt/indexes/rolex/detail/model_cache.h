// ROLEX's model cache on a compute node (§3.4): each group's model and LT/SLT as last read.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dmrt/indexes/rolex/detail/layout.h"
#include "dmrt/indexes/rolex/detail/remote.h"
#include "dmrt/indexes/rolex/detail/retrain.h"
#include "dmrt/runtime/error.h"

namespace dmrt::rolex {

// One compute node's cached copy of a model group: model (segments, boundaries) and its LT/SLT as
// last read. Immutable; a refresh publishes a new one.
struct View {
  GlobalAddress addr;
  ModelImage m;
  uint64_t bytes() const {
    return m.lt.size() * 16 + m.slt.size() * 8 + m.segments.size() * 40 + 64;
  }
  uint64_t slot_use() const { return m.slt[0]; }
};

// Shared by the threads of one compute node. Each group's view sits behind one of 64 striped
// mutexes and is replaced whole, which bumps the group's generation: a handle keeps its own copy
// of a view while that generation is unchanged, so a search takes no lock (Index::Handle::view).
class ModelCache {
 public:
  // `hints`: the flush points' (rolex::FlushPoint) on the cache's READs.
  explicit ModelCache(const Remote& r, const FlushHints& hints = FlushHints::of())
      : remote_(r),
        hints_(hints),
        views_(r.meta.groups),
        gens_(std::make_unique<std::atomic<uint64_t>[]>(r.meta.groups)) {}
  ModelCache(const ModelCache&) = delete;
  ModelCache& operator=(const ModelCache&) = delete;

  size_t groups() const { return views_.size(); }
  // Bumped each time group g's view is replaced. Read before the view: a view replaced after it
  // is taken again next time.
  uint64_t generation(uint64_t g) const { return gens_[g].load(std::memory_order_acquire); }
  // Group g's view, or null when this node has not read it yet.
  std::shared_ptr<const View> get(uint64_t g) const {
    std::lock_guard<std::mutex> l(stripe(g));
    return views_[g];
  }
  // Group g's view, read from the memory node the first time.
  template <class C>
  std::shared_ptr<const View> view(C& c, uint64_t g) {
    auto v = get(g);
    return v ? v : load(c, g);
  }
  // Reads group g's current model object whole (its pointer, then the object).
  template <class C>
  std::shared_ptr<const View> load(C& c, uint64_t g) {
    for (;;) {
      GlobalAddress a = GlobalAddress::from_raw(
          c.template read_value<uint64_t>(remote_.group_ptr(g), hints_.model_read));
      auto v = std::make_shared<View>();
      v->addr = a;
      if (!detail::read_model(c, a, v->m, hints_.model_read))
        throw TransportError("rolex: bad model object");
      if (!tables_consistent(v->m)) {
        c.pause();
        continue;
      }
      model_refreshes_.fetch_add(1, std::memory_order_relaxed);
      put(g, v);
      return v;
    }
  }
  // Re-reads the model pointer and the current model's SLT+LT (one round trip); the whole new
  // model if the pointer was swapped (a retraining).
  template <class C>
  std::shared_ptr<const View> refresh(C& c, uint64_t g, const std::shared_ptr<const View>& v) {
    for (;;) {
      auto nv = std::make_shared<View>(*v);
      uint64_t ptr = 0;
      size_t n = v->m.lt.size();
      std::vector<uint64_t> w(kSltSlots + n);
      Batch b;
      b.read(v->addr + kSltOffset, w.data(), static_cast<uint32_t>(w.size() * 8))
          .hint(hints_.table_read)
          .read(remote_.group_ptr(g), &ptr, 8)
          .hint(hints_.model_read);
      c.run(b);
      if (ptr != v->addr.raw()) return load(c, g);
      std::copy(w.begin(), w.begin() + kSltSlots, nv->m.slt.begin());
      std::copy(w.begin() + kSltSlots, w.end(), nv->m.lt.begin());
      if (!tables_consistent(nv->m)) {
        c.pause();
        continue;
      }
      table_refreshes_.fetch_add(1, std::memory_order_relaxed);
      put(g, nv);
      return nv;
    }
  }

  // Bytes the cached views take.
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t model_refreshes() const { return model_refreshes_.load(std::memory_order_relaxed); }
  uint64_t table_refreshes() const { return table_refreshes_.load(std::memory_order_relaxed); }

 private:
  std::mutex& stripe(uint64_t g) const { return stripes_[g % stripes_.size()]; }
  void put(uint64_t g, std::shared_ptr<const View> v) {
    std::lock_guard<std::mutex> l(stripe(g));
    uint64_t old = views_[g] ? views_[g]->bytes() : 0;
    bytes_.fetch_add(v->bytes() - old, std::memory_order_relaxed);
    views_[g] = std::move(v);
    gens_[g].fetch_add(1, std::memory_order_release);
  }
  // Every chain walks through written entries.
  static bool tables_consistent(const ModelImage& m) {
    std::vector<ChainLink> chain;
    for (uint64_t e : m.lt)
      if (!walk_chain(e, m.slt.data(), chain)) return false;
    return true;
  }

  const Remote remote_;
  const FlushHints hints_;
  std::vector<std::shared_ptr<const View>> views_;
  std::unique_ptr<std::atomic<uint64_t>[]> gens_;
  mutable std::array<std::mutex, 64> stripes_;
  std::atomic<uint64_t> bytes_{0}, model_refreshes_{0}, table_refreshes_{0};
};

}  // namespace dmrt::rolex
