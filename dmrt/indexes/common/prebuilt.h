// Indexes prebuilt per transport. Each index instantiates its templates once per transport of the
// build, in libdmrt, and declares those instantiations `extern` in its public header
// dmrt/indexes/NAME/NAME.h (HStore and ROLEX: in detail/prebuilt.h, which it includes). Its one
// list of templates is the macro DMRT_NAME_PREBUILT(INST, T) there; dmrt/indexes/meson.build
// generates the units that instantiate it (dmrt/indexes/common/prebuilt.cpp.in), from the build's
// transport list (dmrt/policies/transports.h). An index's entry points (create, attach, stats, a
// handle's operations) are [[gnu::noinline]]. GCC does not instantiate a non-inlinable function
// of an extern template, so a translation unit that includes the public header compiles none of
// the index's code and links it instead. A program on a transport of its own includes the
// index's detail/ header and instantiates the index itself.
#pragma once

#include "dmrt/policies/transports.h"
