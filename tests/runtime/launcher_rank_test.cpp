// launcher_rank(): the node id from Slurm's or an MPI launcher's rank variable.
#include "dmrt/runtime/launcher_rank.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace dmrt {
namespace {

// A fake environment: launcher_rank reads only what the test sets.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

TEST(LauncherRank, NoneSetIsNoRank) {
  FakeEnv env{{{"SLURM_JOB_ID", "17"}, {"OMPI_COMM_WORLD_SIZE", "4"}}};
  EXPECT_FALSE(launcher_rank(env).has_value());
}

TEST(LauncherRank, EachVariableAlone) {
  uint32_t value = 3;
  for (const char* var : kLauncherRankVariables) {
    FakeEnv env{{{var, std::to_string(value)}}};
    auto r = launcher_rank(env);
    ASSERT_TRUE(r.has_value()) << var;
    EXPECT_EQ(r->variable, var);
    EXPECT_EQ(r->rank, value);
    ++value;
  }
}

TEST(LauncherRank, MpiRankWinsOverTheBatchStepsSlurmProcid) {
  // mpirun inside an sbatch script: every rank inherits SLURM_PROCID=0.
  FakeEnv env{{{"SLURM_PROCID", "0"}, {"OMPI_COMM_WORLD_RANK", "2"}}};
  auto r = launcher_rank(env);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->variable, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(r->rank, 2u);
  FakeEnv hydra{{{"SLURM_PROCID", "0"}, {"PMI_RANK", "5"}}};
  EXPECT_EQ(launcher_rank(hydra)->rank, 5u);
  EXPECT_EQ(launcher_rank(hydra)->variable, "PMI_RANK");
}

TEST(LauncherRank, SrunAlone) {
  FakeEnv env{{{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}}};
  auto r = launcher_rank(env);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->variable, "SLURM_PROCID");
  EXPECT_EQ(r->rank, 7u);
}

TEST(LauncherRank, BadValuesNameTheVariable) {
  for (const char* bad : {"", "-1", "1x", " 1", "99999999999999999999", "65535"}) {
    FakeEnv env{{{"PMIX_RANK", bad}}};
    try {
      launcher_rank(env);
      ADD_FAILURE() << "accepted PMIX_RANK='" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("PMIX_RANK='"), std::string::npos) << e.what();
    }
  }
  FakeEnv top{{{"PMIX_RANK", "65534"}}};
  EXPECT_EQ(launcher_rank(top)->rank, 65534u);
  FakeEnv small{{{"PMIX_RANK", "4"}}};
  EXPECT_THROW(launcher_rank(small, 3), ConfigError);
}

TEST(LauncherRank, ReadsTheProcessEnvironment) {
  for (const char* var : kLauncherRankVariables) unsetenv(var);
  EXPECT_FALSE(launcher_rank().has_value());
  setenv("MV2_COMM_WORLD_RANK", "1", 1);
  auto r = launcher_rank();
  unsetenv("MV2_COMM_WORLD_RANK");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->variable, "MV2_COMM_WORLD_RANK");
  EXPECT_EQ(r->rank, 1u);
}

}  // namespace
}  // namespace dmrt
