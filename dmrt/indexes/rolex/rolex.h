// ROLEX: the index's public header, the one a program includes. It gives rolex::Index<T>, its
// Options, its retraining service and deploy(), which starts it where the transport hosts
// services; all prebuilt in libdmrt for each transport of the build: the instantiations are
// declared extern in detail/prebuilt.h, generated from DMRT_ROLEX_PREBUILT by
// dmrt/indexes/meson.build. Its entry points are [[gnu::noinline]], so a program's translation unit
// compiles none of the index's code and links it (dmrt/indexes/common/prebuilt.h). The internals
// are in detail/ (README.md maps them to the paper).
#pragma once

#include "dmrt/indexes/rolex/detail/deploy.h"
#include "dmrt/indexes/rolex/detail/prebuilt.h"
