// linprobe: the index's public header, the one a program includes. It gives linprobe::HashTable<T>
// (also linprobe::Index<T>), its Options, prebuilt in libdmrt for each transport of the build: the
// instantiations are declared extern below and generated from DMRT_LINPROBE_PREBUILT by
// dmrt/indexes/meson.build. Its entry points are [[gnu::noinline]], so a program's translation unit
// compiles none of the index's code and links it (dmrt/indexes/common/prebuilt.h). The internals
// are in detail/ (README.md maps them to the paper).
#pragma once

#include "dmrt/indexes/common/prebuilt.h"
#include "dmrt/indexes/linprobe/detail/table.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_LINPROBE_PREBUILT(INST, T) INST class linprobe::HashTable<T>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_LINPROBE_PREBUILT, extern template)

}  // namespace dmrt
