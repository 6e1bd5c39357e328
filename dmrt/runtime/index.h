// The Index concept: the one shape every disaggregated-memory index type offers its users (the
// bench's generic adapter, the tests, embedders), so that code written against it runs any index.
#pragma once

#include <concepts>
#include <memory>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/transport.h"

namespace dmrt {

// An index type I over transport T:
//   typename I::Options                     plain data; every field has a working default
//   typename I::Handle                      per-client handle, a KvHandle (scans: RangeHandle)
//   I::create(Client<T>&, const Options&)   builds the index in the pool (extra create()
//                                           parameters, such as a bulk load, are defaulted)
//   I::attach(Client<T>&, const Options&)   joins an index that another client or process made
//   i.handle(Client<T>&)                    a handle for that client
//   i.stats(Client<T>&)                     figures for dmrt-bench's `index_stats`; may run verbs
//                                           with the client given (between phases, not counted)
//   i.options()                             the options it runs with (after create's adjustments)
// An index object stands for one compute node: indexes with per-compute-node state (caches, lock
// tables, service membership) are attached once per compute node, the others may share one.
template <class I, class T>
concept Index = Transport<T> &&
    requires(Client<T>& c, const typename I::Options& o, I& idx, const I& cidx) {
  typename I::Options;
  typename I::Handle;
  requires KvHandle<typename I::Handle>;
  { I::create(c, o) } -> std::same_as<std::shared_ptr<I>>;
  { I::attach(c, o) } -> std::same_as<std::shared_ptr<I>>;
  { idx.handle(c) } -> std::same_as<typename I::Handle>;
  { idx.stats(c) } -> std::same_as<IndexStats>;
  { cidx.options() } -> std::same_as<const typename I::Options&>;
};

}  // namespace dmrt
