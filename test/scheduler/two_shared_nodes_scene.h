// Issue 25 step 4, the scene of the gang preemptors on shared nodes (a Slurm job of two nodes in
// slurm_loop_test.cc, a gang of pods in shared_gang_loop_test.cc): two shared nodes of 8 CPUs,
// each half taken by an interactive Slurm job (never a victim); the other half of n1 holds a
// batch pod, of n2 a batch Slurm job: the plan's victims, one per node.
#ifndef ONEQUEUE_TEST_SCHEDULER_TWO_SHARED_NODES_SCENE_H_
#define ONEQUEUE_TEST_SCHEDULER_TWO_SHARED_NODES_SCENE_H_

#include <gtest/gtest.h>

#include "fake_world.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {

struct TwoSharedNodesScene {
  SlurmLoopCluster c{2};
  Config cfg = SlurmLoopConfig("placeholder");
  uint32_t low_placeholder = 0;  // the batch pod's placeholder on n1
  TwoSharedNodesScene() {
    cfg.slurm.partition_sharing = {{"pool", "shared"}};
    cfg.slurm.qos_map = {{"", "interactive"}, {"b", "batch"}};
    c.slurm.shared = {"n1", "n2"};
    c.slurm.Submit(6, 4);
    c.slurm.Run(6, "n2");
    c.slurm.Submit(7, 4);
    c.slurm.Run(7, "n1");
    c.slurm.Submit(9, 4).qos = "b";
    c.slurm.Run(9, "n2");
    c.k8s.AddPod("low", "4", "batch", "n1");  // bound already: adopted, mirrored
  }
  // Two cycles from `t0`: the bound pod gets its placeholder, which Slurm runs.
  void MirrorTheBoundPod(SchedulingLoop& loop, queue::Time t0) {
    c.Cycle(loop, t0);
    ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
    low_placeholder = c.slurm.pod_placeholders[0];
    c.slurm.Run(low_placeholder, "n1");
    c.Cycle(loop, t0 + 1);
  }
};

}  // namespace onequeue::scheduler

#endif  // ONEQUEUE_TEST_SCHEDULER_TWO_SHARED_NODES_SCENE_H_
