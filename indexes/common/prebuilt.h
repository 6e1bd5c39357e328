// Indexes prebuilt per transport. Each index instantiates its templates once per transport of the
// build, in libdmrt, and declares those instantiations `extern` in indexes/NAME/prebuilt.h. Its
// one list of templates is the macro DMRT_NAME_PREBUILT(INST, T) there; indexes/meson.build
// generates the units that instantiate it (indexes/common/prebuilt.cpp.in), from the build's
// transport list (policies/transports.h). An index's entry points (create, attach, stats, a
// handle's operations) are [[gnu::noinline]]. GCC does not instantiate a non-inlinable function
// of an extern template, so a translation unit that includes prebuilt.h compiles none of the
// index's code and links it instead. Tests and the bench include the prebuilt headers. A program
// on a transport of its own includes the index header and instantiates the index itself.
#pragma once

#include "policies/transports.h"
