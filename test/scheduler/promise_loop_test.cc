// Issue 15 part 2 in the daemon: the loop hands each cycle's reservations to the next
// (CarryReservations), so a waiting job's reservation does not move later when a job of higher
// priority arrives. Planned from scratch, the newcomer would take the first node that frees and
// push the waiting job back by the newcomer's time limit.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "fake_world.h"
#include "scheduler/cycle_status.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/slurm_world.h"

namespace onequeue::scheduler {
namespace {

constexpr queue::Time kT0 = 1763722800;  // 2025-11-21T11:00:00Z

std::map<std::string, queue::Time> Reservations(const StatusBoard& board) {
  std::map<std::string, queue::Time> starts;
  for (const queue::ReserveDecision& r : board.Latest()->plan->reservations) starts[r.workload] = r.start;
  return starts;
}

TEST(PromiseLoopTest, AHigherPriorityArrivalDoesNotPushAWaitingJobsReservationBack) {
  World k8s;
  FakeSlurm slurm;
  k8s.slurm = &slurm;
  slurm.now = kT0;
  for (const char* n : {"n1", "n2"}) {
    k8s.AddNode(n, "8");
    slurm.AddNode(n);
  }
  Config cfg;
  cfg.queue.reservation_depth = 10;
  cfg.queue.keep_reservations = true;
  cfg.queue.weights = {{"size", 0}};  // queue order: QOS, then submit order
  cfg.queue.qos = {{"normal", 100, true, false, 0}, {"batch", 10, true, false, 0}};
  cfg.slurm.enabled = true;
  cfg.slurm.shared_partitions = {"pool"};
  cfg.slurm.lend_mechanism = "drain";
  cfg.slurm.lend_after_seconds = 60;
  cfg.slurm.return_after_seconds = 600;
  cfg.slurm.default_qos = "batch";
  SchedulingLoop loop(cfg, &k8s, &k8s, &slurm);
  StatusBoard board;
  loop.PublishTo(&board);
  auto cycle = [&](queue::Time t) {
    slurm.now = t;
    return loop.RunCycle(t);
  };

  // Jobs 1 and 2 (one node each, 30 min) take both nodes; job 3 needs both and waits for them.
  slurm.Submit(1, 8);
  slurm.Submit(2, 8);
  slurm::SlurmJob& wide = slurm.Submit(3, 16);
  wide.node_count = 2;
  cycle(kT0);
  cycle(kT0 + 61);  // lent after lendAfterSeconds, started
  cycle(kT0 + 62);
  ASSERT_EQ(slurm.Job(1).state, slurm::JobState::kRunning);
  ASSERT_EQ(slurm.Job(2).state, slurm::JobState::kRunning);
  const queue::Time first_end = kT0 + 61 + 1800;
  ASSERT_EQ(Reservations(board)[SlurmWorkloadId(3)], first_end);

  // Job 4 (QOS normal: higher priority; one node for 60 min) arrives.
  slurm::SlurmJob& urgent = slurm.Submit(4, 8);
  urgent.qos = "normal";
  urgent.time_limit = absl::Minutes(60);
  cycle(kT0 + 120);
  const auto kept = Reservations(board);
  EXPECT_EQ(kept.at(SlurmWorkloadId(3)), first_end);  // from scratch: first_end + 3600
  EXPECT_EQ(kept.at(SlurmWorkloadId(4)), first_end + 1800);  // after job 3
  cycle(kT0 + 180);
  EXPECT_EQ(Reservations(board).at(SlurmWorkloadId(3)), first_end);
}

}  // namespace
}  // namespace onequeue::scheduler
