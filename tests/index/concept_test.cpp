// Every index type satisfies dmrt::Index (dmrt/runtime/index.h) on every transport this build has:
// checked at compile time here, in one small TU, rather than in headers every TU includes.
#include <gtest/gtest.h>

#include "dmrt/indexes/chime/chime.h"
#include "dmrt/indexes/dmtree/dmtree.h"
#include "dmrt/indexes/hstore/hstore.h"
#include "dmrt/indexes/race/race.h"
#include "dmrt/indexes/rolex/rolex.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "dmrt/indexes/smart/smart.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/index.h"
#if DMRT_TRANSPORT_SIM
#include "dmrt/policies/sim/transport.h"
#endif
#if DMRT_TRANSPORT_VERBS
#include "dmrt/policies/verbs/transport.h"
#endif

namespace dmrt {
namespace {

template <class T>
constexpr bool all_indexes() {
  static_assert(Index<race::Index<T>, T>);
  static_assert(Index<chime::Index<T>, T>);
  static_assert(Index<sherman::Index<T>, T>);
  static_assert(Index<dmtree::Index<T>, T>);
  static_assert(Index<rolex::Index<T>, T>);
  static_assert(Index<hstore::Index<T>, T>);
  static_assert(Index<smart::Index<T>, T>);
  // The range indexes scan; the hash index does not.
  static_assert(!RangeHandle<typename race::Index<T>::Handle>);
  static_assert(RangeHandle<typename chime::Index<T>::Handle>);
  static_assert(RangeHandle<typename sherman::Index<T>::Handle>);
  static_assert(RangeHandle<typename dmtree::Index<T>::Handle>);
  static_assert(RangeHandle<typename rolex::Index<T>::Handle>);
  static_assert(RangeHandle<typename hstore::Index<T>::Handle>);
  static_assert(RangeHandle<typename smart::Index<T>::Handle>);
  return true;
}

static_assert(all_indexes<ShmTransport>());
#if DMRT_TRANSPORT_SIM
static_assert(all_indexes<SimTransport>());
#endif
#if DMRT_TRANSPORT_VERBS
static_assert(all_indexes<VerbsTransport>());
#endif

// The checks above are the test; this only gives the binary a case to report.
TEST(IndexConcept, EveryIndexConformsOnEveryBuiltTransport) {
  SUCCEED();
}

}  // namespace
}  // namespace dmrt
