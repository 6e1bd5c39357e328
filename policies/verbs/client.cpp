// Client over the verbs transport, instantiated once for every user of libdmrt (declared extern in
// policies/verbs/transport.h).
#include "policies/verbs/transport.h"

namespace dmrt {

template class Client<VerbsTransport>;

}  // namespace dmrt
