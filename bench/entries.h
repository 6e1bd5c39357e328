// The entry point of each index's run side (bench/run_NAME.cpp), called by its spec
// (bench/index_NAME.h) once main.cpp has parsed the command line.
#pragma once

#include "bench/adapter.h"
#include "bench/spec.h"
#include "indexes/chime/options.h"
#include "indexes/dmtree/options.h"
#include "indexes/hstore/options.h"
#include "indexes/race/options.h"
#include "indexes/rolex/options.h"
#include "indexes/sherman/options.h"
#include "indexes/smart/options.h"

namespace dmrt::bench {

int run_race(const RunRequest&, const FlagResolver<race::Options>&);
int run_hstore(const RunRequest&, const FlagResolver<hstore::Options>&);
int run_chime(const RunRequest&, const FlagResolver<chime::Options>&);
int run_sherman(const RunRequest&, const FlagResolver<sherman::Options>&);
int run_rolex(const RunRequest&, const FlagResolver<rolex::Options>&);
int run_dmtree(const RunRequest&, const FlagResolver<dmtree::Options>&);
int run_smart(const RunRequest&, const FlagResolver<smart::Options>&);
// The local peers: no options.
int run_tbb_hash(const RunRequest&);
int run_ordered_map(const RunRequest&);
int run_absl_hash(const RunRequest&);
int run_tbb_map(const RunRequest&);
// Whether the index's handle takes byte-string keys (BytesKvHandle, runtime/kv.h): --key-size > 8
// runs only on those, and --help marks them [bytes].
bool byte_keys_race();
bool byte_keys_hstore();
bool byte_keys_chime();
bool byte_keys_sherman();
bool byte_keys_rolex();
bool byte_keys_dmtree();
bool byte_keys_smart();
bool byte_keys_tbb_hash();
bool byte_keys_ordered_map();
bool byte_keys_absl_hash();
bool byte_keys_tbb_map();

}  // namespace dmrt::bench
