// The node id a cluster launcher gave this process (Slurm's or an MPI launcher's rank variable),
// so that one srun or mpirun starts a whole cluster from one cluster file.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "dmrt/runtime/error.h"

namespace dmrt {

struct LauncherRank {
  std::string variable;  // the environment variable it came from, for the log line
  uint32_t rank = 0;
};

// The variables looked up, in this order. The MPI launchers' come before Slurm's: an mpirun inside
// an sbatch script runs every rank with the batch step's SLURM_PROCID (0), and only the MPI
// variable tells the ranks apart; under srun both agree.
inline constexpr const char* kLauncherRankVariables[] = {
    "OMPI_COMM_WORLD_RANK",  // Open MPI's mpirun
    "PMIX_RANK",             // any PMIx launcher (Open MPI 5, srun --mpi=pmix)
    "PMI_RANK",              // MPICH / Intel MPI (Hydra), srun --mpi=pmi2
    "MV2_COMM_WORLD_RANK",   // MVAPICH2
    "SLURM_PROCID",          // srun
};

// The first of kLauncherRankVariables that `get` (getenv by default) finds set, or nullopt when
// none is. Throws ConfigError, naming the variable, when its value is not a rank: a decimal
// integer from 0 to `max_rank`.
template <class GetEnv>
std::optional<LauncherRank> launcher_rank(GetEnv&& get, uint32_t max_rank = 65534) {
  for (const char* var : kLauncherRankVariables) {
    const char* value = get(var);
    if (value == nullptr) continue;
    const std::string v(value);
    uint64_t rank = 0;
    bool ok = !v.empty() && v.size() <= 10;
    for (char c : v) ok = ok && c >= '0' && c <= '9';
    if (ok) {
      rank = std::stoull(v);
      ok = rank <= max_rank;
    }
    if (!ok)
      throw ConfigError(std::string(var) + "='" + v + "' is not a node id (0 to " +
                        std::to_string(max_rank) + ")");
    return LauncherRank{var, static_cast<uint32_t>(rank)};
  }
  return std::nullopt;
}

inline std::optional<LauncherRank> launcher_rank(uint32_t max_rank = 65534) {
  return launcher_rank([](const char* name) -> const char* { return std::getenv(name); }, max_rank);
}

}  // namespace dmrt
