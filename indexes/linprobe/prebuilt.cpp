// linprobe instantiated once per transport of this build (declared in indexes/linprobe/prebuilt.h).
#include "indexes/linprobe/prebuilt.h"

namespace dmrt {

#define DMRT_LINPROBE_INSTANTIATE(T) template class linprobe::HashTable<T>;
DMRT_FOR_EACH_TRANSPORT(DMRT_LINPROBE_INSTANTIATE)
#undef DMRT_LINPROBE_INSTANTIATE

}  // namespace dmrt
