// Placeholder until the local Slurm environment (test/common/slurm_cluster.h) lands.
#include "gtest/gtest.h"
