// Indexes prebuilt per transport. Each index instantiates its template once per transport of the
// build, in libdmrt (indexes/NAME/prebuilt.cpp), and declares those instantiations `extern` in
// indexes/NAME/prebuilt.h. An index's entry points (create, attach, stats, a handle's operations)
// are [[gnu::noinline]]. GCC does not instantiate a non-inlinable function of an extern template,
// so a translation unit that includes prebuilt.h compiles none of the index's code and links it
// instead. Tests and the bench include the prebuilt headers. A program on a transport of its own
// includes the index header and instantiates the index itself, as before.
// DMRT_FOR_EACH_TRANSPORT(X) expands X(T) for each transport T of the build: the one list of them
// that the prebuilt files share.
#pragma once

#include "policies/shm/transport.h"
#if DMRT_TRANSPORT_SIM
#include "policies/sim/transport.h"
#endif
#if DMRT_TRANSPORT_VERBS
#include "policies/verbs/transport.h"
#endif

#if DMRT_TRANSPORT_SIM
#define DMRT_PREBUILT_SIM_(X) X(SimTransport)
#else
#define DMRT_PREBUILT_SIM_(X)
#endif
#if DMRT_TRANSPORT_VERBS
#define DMRT_PREBUILT_VERBS_(X) X(VerbsTransport)
#else
#define DMRT_PREBUILT_VERBS_(X)
#endif
#define DMRT_FOR_EACH_TRANSPORT(X) X(ShmTransport) DMRT_PREBUILT_SIM_(X) DMRT_PREBUILT_VERBS_(X)
