// Client over the shm transport, instantiated once for every user of libdmrt (declared extern in
// dmrt/policies/shm/transport.h).
#include "dmrt/policies/shm/transport.h"

namespace dmrt {

template class Client<ShmTransport>;

}  // namespace dmrt
