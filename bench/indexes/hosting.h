// service_hosting(Client<T>&) of every transport of this build (runtime/service_hosting.h), for
// the run specs that deploy memory-node services (bench/indexes/hstore_run.h, rolex_run.h).
#pragma once

#include "policies/shm/hosting.h"
#if DMRT_TRANSPORT_SIM
#include "policies/sim/hosting.h"
#endif
#if DMRT_TRANSPORT_VERBS
#include "policies/verbs/hosting.h"
#endif
