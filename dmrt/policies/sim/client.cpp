// Client over the sim transport, instantiated once for every user of libdmrt (declared extern in
// dmrt/policies/sim/transport.h).
#include "dmrt/policies/sim/transport.h"

namespace dmrt {

template class Client<SimTransport>;

}  // namespace dmrt
