// SMART: the index's public header, the one a program includes. It gives smart::Tree<T> (also
// smart::Index<T>), its Options, prebuilt in libdmrt for each transport of the build: the
// instantiations are declared extern below and generated from DMRT_SMART_PREBUILT by
// dmrt/indexes/meson.build. Its entry points are [[gnu::noinline]], so a program's translation unit
// compiles none of the index's code and links it (dmrt/indexes/common/prebuilt.h). The internals
// are in detail/ (README.md maps them to the paper).
#pragma once

#include "dmrt/indexes/common/prebuilt.h"
#include "dmrt/indexes/smart/detail/tree.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_SMART_PREBUILT(INST, T) INST class smart::Tree<T>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_SMART_PREBUILT, extern template)

}  // namespace dmrt
