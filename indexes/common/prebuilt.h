// Indexes prebuilt per transport. Each index instantiates its template once per transport of the
// build, in libdmrt (indexes/NAME/prebuilt.cpp), and declares those instantiations `extern` in
// indexes/NAME/prebuilt.h. An index's entry points (create, attach, stats, a handle's operations)
// are [[gnu::noinline]]. GCC does not instantiate a non-inlinable function of an extern template,
// so a translation unit that includes prebuilt.h compiles none of the index's code and links it
// instead. Tests and the bench include the prebuilt headers. A program on a transport of its own
// includes the index header and instantiates the index itself, as before.
#pragma once

#include "policies/shm/transport.h"
#if DMRT_TRANSPORT_SIM
#include "policies/sim/transport.h"
#endif
#if DMRT_TRANSPORT_VERBS
#include "policies/verbs/transport.h"
#endif
