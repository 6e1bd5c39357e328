// Client over the verbs transport, instantiated once for every user of libdmrt (declared extern in
// dmrt/policies/verbs/transport.h).
#include "dmrt/policies/verbs/transport.h"

namespace dmrt {

template class Client<VerbsTransport>;

}  // namespace dmrt
