// Client over the sim transport, instantiated once for every user of libdmrt (declared extern in
// policies/sim/transport.h).
#include "policies/sim/transport.h"

namespace dmrt {

template class Client<SimTransport>;

}  // namespace dmrt
