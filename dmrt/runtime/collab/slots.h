// Default root slots of the collaborative service (dmrt/runtime/collab/service.h), apart from the
// service itself so that the index-side registry of root slots (dmrt/indexes/common/root_slots.h)
// can list them without pulling the whole service in.
#pragma once

namespace dmrt::collab {

// On the first memory node: the membership word, the table-id counter, the service descriptor.
inline constexpr unsigned kDefaultMembershipSlot = 11;
inline constexpr unsigned kDefaultCounterSlot = 13;
inline constexpr unsigned kDefaultDescriptorSlot = 14;

}  // namespace dmrt::collab
