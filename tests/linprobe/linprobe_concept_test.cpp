// linprobe models dmrt::Index (dmrt/runtime/index.h) on every transport this build has, checked at
// compile time; its handle is a KvHandle with no scans and no byte-string keys.
#include <gtest/gtest.h>

#include "dmrt/indexes/linprobe/linprobe.h"
#include "dmrt/runtime/index.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt {
namespace {

template <class T>
constexpr bool conforms() {
  static_assert(Index<linprobe::Index<T>, T>);
  static_assert(!RangeHandle<typename linprobe::Index<T>::Handle>);
  static_assert(!BytesKvHandle<typename linprobe::Index<T>::Handle>);
  return true;
}

static_assert(conforms<ShmTransport>());
#if DMRT_TRANSPORT_SIM
static_assert(conforms<SimTransport>());
#endif
#if DMRT_TRANSPORT_VERBS
static_assert(conforms<VerbsTransport>());
#endif

// The static_asserts above are the concept test; the defaults must also lie in their ranges.
TEST(LinprobeConcept, ConformsAndItsDefaultsAreInRange) {
  EXPECT_EQ(check_option_fields(linprobe::Options{}), "");
}

}  // namespace
}  // namespace dmrt
