// Issue 12, cycles proportional to what changed: after a full cycle, a cycle whose only changes
// are new single-pod workloads plans just those (QueuePlanner::OnArrival) and acts as a full cycle
// would; anything else, and a full cycle due (queue.fullCycleSeconds), runs a full cycle.
// Each scenario runs two worlds in lockstep, one with incremental cycles and one whose every cycle
// is full (fullCycleSeconds: 0), and expects the same bindings from both.
#include "scheduler/scheduling_loop.h"

#include "watched_world.h"
#include "scheduler/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onequeue::scheduler {
namespace {

// The fake world seen through a KubeSource (watched_world.h), with the changes the tests make.
class EventWorld : public WatchedWorld {
 public:
  void Node(const std::string& name, const std::string& cpu) {
    AddNode(name, cpu);
    for (const auto& n : Nodes()) {
      if (n.metadata.name == name) source_.UpsertNode(n);
    }
  }
  // A pod with a time limit, pending or bound; `group`: a gang member of a group of two.
  void Pod(const std::string& name, const std::string& cpu, const std::string& node = "",
           const std::string& group = "") {
    AddPod(name, cpu, "", node);
    k8s::Pod* p = Find("ns/" + name);
    p->metadata.annotations[kTimeLimitAnnotation] = "1h";
    if (!group.empty()) {
      p->metadata.annotations[kGroupAnnotation] = group;
      p->metadata.annotations[kGroupSizeAnnotation] = "2";
    }
    source_.UpsertPod(*p);
  }
  // An update of a pod's annotation, as onequeue's own waiting report or an `oq hold` makes.
  void Annotate(const std::string& key, const std::string& annotation, const std::string& value) {
    k8s::Pod* p = Find(key);
    p->metadata.annotations[annotation] = value;
    source_.UpsertPod(*p);
  }
  // `oq hold`: the Held condition in the pod's status.
  void Hold(const std::string& key, const std::string& reason) {
    k8s::Pod* p = Find(key);
    p->conditions.push_back({kHeldCondition, "True", "HeldByAdministrator", reason, ""});
    source_.UpsertPod(*p);
  }
  void Delete(const std::string& key) {
    source_.DeletePod(*Find(key));
    DeletePod(key);
  }

};

Config WithFullCycleSeconds(int64_t seconds) {
  Config c = TestConfig();
  c.queue.full_cycle_seconds = seconds;
  return c;
}

// Two worlds, the same events: `incremental` plans arrivals alone, `full` every cycle whole.
struct Twins {
  Config incremental_config = WithFullCycleSeconds(5);
  Config full_config = WithFullCycleSeconds(0);
  EventWorld incremental_world, full_world;
  SchedulingLoop incremental{incremental_config, &incremental_world, &incremental_world};
  SchedulingLoop full{full_config, &full_world, &full_world};

  template <typename F>
  void Both(F f) {
    f(incremental_world);
    f(full_world);
  }
  // Runs both at `now`; expects the same bindings so far; returns the incremental loop's stats.
  CycleStats Cycle(queue::Time now) {
    const CycleStats s = incremental.RunCycle(now);
    const CycleStats f = full.RunCycle(now);
    EXPECT_FALSE(f.incremental);
    EXPECT_EQ(incremental_world.binds, full_world.binds) << "at " << now;
    return s;
  }
};

// Issue 26, arrival cycles with Slurm on: the twins again, each with its own Slurm (two 8-CPU
// nodes of partition "pool", a batch job waiting, a pod on n2). `Freeze` is a poll that answered "no change":
// the daemon's view keeps the very tables the last full cycle read; `Thaw` a poll with news.
struct SlurmTwins {
  // `sharing`: partition "pool"'s sharing key; `exclusive_n3`: a third node, of partition "excl",
  // lent whole as before.
  static Config WithSlurm(int64_t seconds, const std::string& sharing, bool exclusive_n3) {
    Config c = SlurmLoopConfig("drain");
    c.queue.full_cycle_seconds = seconds;
    if (!sharing.empty()) c.slurm.partition_sharing = {{"pool", sharing}};
    if (exclusive_n3) c.slurm.shared_partitions.push_back("excl");
    return c;
  }
  explicit SlurmTwins(const std::string& sharing = "", bool exclusive_n3 = false)
      : incremental_config(WithSlurm(5, sharing, exclusive_n3)), full_config(WithSlurm(0, sharing, exclusive_n3)) {
    for (auto [world, slurm] : {std::pair{&incremental_world, &incremental_slurm}, {&full_world, &full_slurm}}) {
      world->slurm = slurm;
      slurm->now = kNow;
      for (const char* name : {"n1", "n2"}) {
        world->Node(name, "8");
        slurm->AddNode(name);
      }
      slurm->Submit(7);
      world->Pod("base", "1", "n2");  // its namespace's account is known from the first cycle on
      if (!exclusive_n3) continue;
      world->Node("n3", "8");
      slurm->AddNode("n3");
      slurm->Node("n3").partitions = {"excl", "reclaim"};
    }
  }
  Config incremental_config, full_config;
  EventWorld incremental_world, full_world;
  FakeSlurm incremental_slurm, full_slurm;
  SchedulingLoop incremental{incremental_config, &incremental_world, &incremental_world, &incremental_slurm};
  SchedulingLoop full{full_config, &full_world, &full_world, &full_slurm};

  void Pod(const std::string& name, const std::string& cpu) {
    incremental_world.Pod(name, cpu);
    full_world.Pod(name, cpu);
  }
  void Freeze() {
    incremental_slurm.frozen_view = incremental_slurm.View();
    full_slurm.frozen_view = full_slurm.View();
  }
  void Thaw() { incremental_slurm.frozen_view = full_slurm.frozen_view = nullptr; }
  CycleStats Cycle(queue::Time now) {
    incremental_slurm.now = full_slurm.now = now;
    const CycleStats s = incremental.RunCycle(now);
    const CycleStats f = full.RunCycle(now);
    EXPECT_FALSE(f.incremental);
    EXPECT_EQ(incremental_world.binds, full_world.binds) << "at " << now;
    EXPECT_EQ(incremental_slurm.calls, full_slurm.calls) << "at " << now;
    return s;
  }
};

TEST(ArrivalCycleTest, WithSlurmOnAnArrivalIsPlannedAloneOnlyWhileThePollIsUnchanged) {
  SlurmTwins t;
  EXPECT_FALSE(t.Cycle(kNow).incremental) << "the first cycle is full";
  EXPECT_FALSE(t.Cycle(kNow + 1).incremental) << "the fences' owner marks showing up: nodes changed";
  t.Freeze();
  EXPECT_FALSE(t.Cycle(kNow + 2).incremental) << "a full cycle reads the frozen view first";

  t.Pod("a1", "2");
  CycleStats s = t.Cycle(kNow + 3);
  EXPECT_TRUE(s.incremental) << "the same poll: the arrival alone";
  EXPECT_EQ(s.bound, 1);
  t.Pod("a2", "2");
  EXPECT_TRUE(t.Cycle(kNow + 4).incremental);

  // A poll with news (here only a new view of the same world): the full cycle's.
  t.Thaw();
  t.Pod("a3", "1");
  EXPECT_FALSE(t.Cycle(kNow + 5).incremental) << "Slurm's view changed";
  t.Freeze();
  EXPECT_FALSE(t.Cycle(kNow + 6).incremental) << "the frozen view is another new one";
  t.Pod("a4", "1");
  EXPECT_TRUE(t.Cycle(kNow + 7).incremental);

  // A pod that has to wait: its reason may name Slurm's work, which the full cycle reads.
  t.Pod("big", "16");
  EXPECT_FALSE(t.Cycle(kNow + 8).incremental) << "a waiting arrival";
  // Packed beside `base` on n2, as the full twin binds them.
  EXPECT_THAT(t.incremental_world.binds, ::testing::ElementsAre("ns/a1->n2", "ns/a2->n2", "ns/a3->n2", "ns/a4->n2"));
}

TEST(ArrivalCycleTest, WithSlurmOnAStaleViewMakesAFullCycle) {
  SlurmTwins t;
  t.Cycle(kNow);
  t.Cycle(kNow + 1);
  t.Freeze();  // refreshed at kNow + 1, then the poller stops answering
  t.Cycle(kNow + 29);  // full (five seconds since the last); the view is 28 s old: fresh
  t.Pod("a1", "1");
  EXPECT_TRUE(t.Cycle(kNow + 30).incremental);
  t.Pod("a2", "1");
  EXPECT_FALSE(t.Cycle(kNow + 32).incremental) << "31 s old: past the 30 s bound";
}

TEST(ArrivalCycleTest, WithSlurmOnAnArrivalForASharedNodeIsMirroredByTheFullCycle) {
  SlurmTwins t("shared");
  t.Cycle(kNow);  // `base`, bound on shared n2 before onequeue knew it, is mirrored: its placeholder runs
  for (FakeSlurm* slurm : {&t.incremental_slurm, &t.full_slurm}) {
    ASSERT_EQ(slurm->pod_placeholders.size(), 1u);
    slurm->Run(slurm->pod_placeholders[0], "n2");
  }
  t.Cycle(kNow + 1);
  t.Freeze();
  t.Cycle(kNow + 2);
  t.Pod("a0", "1");  // what every node of the pool is here: shared
  const CycleStats s = t.Cycle(kNow + 3);
  EXPECT_FALSE(s.incremental) << "a pod on a shared node is mirrored in Slurm before its bind";
  EXPECT_EQ(t.incremental_slurm.pod_placeholders.size(), 2u) << "a0's placeholder submitted";
  EXPECT_TRUE(t.incremental_world.binds.empty()) << "bound only once its placeholder runs";
}

// A pod's placeholder still pending on shared n1/n2 (its mirror under way): an arrival that fits
// n3, a node of an exclusive partition, waits for the full cycle too (the mirror's timeout and
// undo are the full cycle's steps).
TEST(ArrivalCycleTest, WithSlurmOnAMirrorUnderWayMakesEveryCycleFull) {
  SlurmTwins t("shared", /*exclusive_n3=*/true);
  t.Cycle(kNow);
  for (FakeSlurm* slurm : {&t.incremental_slurm, &t.full_slurm}) slurm->Run(slurm->pod_placeholders.at(0), "n2");
  t.Cycle(kNow + 1);
  t.Pod("a0", "7");  // fits only n1 (shared): mirrored, its placeholder pending
  t.Cycle(kNow + 2);
  ASSERT_EQ(t.incremental_slurm.pod_placeholders.size(), 2u);
  t.Freeze();
  t.Cycle(kNow + 3);
  t.Pod("a1", "8");  // fits only n3, which Kubernetes holds whole
  EXPECT_FALSE(t.Cycle(kNow + 4).incremental) << "a0's mirror is under way";
}

TEST(ArrivalCycleTest, ArrivalsOneByOneBindWhereAFullCycleWouldAndAWaitingOneIsReported) {
  Twins t;
  t.Both([](EventWorld& w) {
    w.Node("n1", "4");
    w.Node("n2", "4");
    w.Pod("big", "3", "n1");
  });
  EXPECT_FALSE(t.Cycle(kNow).incremental) << "the first cycle is full";

  t.Both([](EventWorld& w) { w.Pod("a1", "1"); });
  CycleStats s = t.Cycle(kNow + 1);
  EXPECT_TRUE(s.incremental);
  EXPECT_EQ(s.bound, 1);
  t.Both([](EventWorld& w) { w.Pod("a2", "2"); });
  s = t.Cycle(kNow + 2);
  EXPECT_TRUE(s.incremental) << "a new pod and the binding of a1 showing up: arrivals only";
  EXPECT_EQ(s.bound, 1);
  EXPECT_THAT(t.incremental_world.binds, ::testing::ElementsAre("ns/a1->n1", "ns/a2->n2"));

  // No room for 3 CPUs: it would get the reservation, which the next full plan must keep as a
  // promise, so a full cycle plans it.
  t.Both([](EventWorld& w) { w.Pod("a3", "3"); });
  s = t.Cycle(kNow + 3);
  EXPECT_FALSE(s.incremental);
  // Behind the reservation: a4 backfills on n2, a5 (a whole node) waits.
  t.Both([](EventWorld& w) { w.Pod("a4", "2"); });
  s = t.Cycle(kNow + 4);
  EXPECT_TRUE(s.incremental);
  EXPECT_EQ(s.bound, 1);
  t.Both([](EventWorld& w) { w.Pod("a5", "4"); });
  s = t.Cycle(kNow + 5);
  EXPECT_TRUE(s.incremental);
  EXPECT_EQ(s.bound, 0);
  EXPECT_EQ(s.waiting, 1);
  ASSERT_EQ(t.incremental_world.reports["ns/a5"].size(), 1u);
  ASSERT_EQ(t.full_world.reports["ns/a5"].size(), 1u);
  const WaitReport& got = t.incremental_world.reports["ns/a5"][0];
  const WaitReport& want = t.full_world.reports["ns/a5"][0];
  EXPECT_EQ(got.reason, want.reason);
  EXPECT_EQ(got.estimated_start, want.estimated_start);
  // The position counts a4, started since the full cycle, as still ahead (QueuePlanner::OnArrival).
  EXPECT_EQ(want.queue_position, 2);
  EXPECT_EQ(got.queue_position, want.queue_position + 1);

  // An update that changes nothing a snapshot reads (here onequeue's own report on a5; a kubelet's
  // status on a bound pod alike) keeps the cycle incremental; an `oq hold` does not.
  t.Both([](EventWorld& w) { w.Annotate("ns/a5", kQueuePositionAnnotation, "3"); });
  EXPECT_TRUE(t.Cycle(kNow + 6).incremental);
  t.Both([](EventWorld& w) { w.Annotate("ns/a1", "example.com/note", "x"); });
  EXPECT_TRUE(t.Cycle(kNow + 6).incremental) << "a bound pod's unrelated change";
  t.Both([](EventWorld& w) { w.Hold("ns/a5", "maintenance"); });
  EXPECT_FALSE(t.Cycle(kNow + 7).incremental) << "held: a pending pod changed";

  // Five seconds after the last full cycle (kNow + 7), the next one is full whatever changed.
  t.Both([](EventWorld& w) { w.Pod("a6", "1"); });
  EXPECT_TRUE(t.Cycle(kNow + 11).incremental);
  t.Both([](EventWorld& w) { w.Pod("a7", "1"); });
  EXPECT_FALSE(t.Cycle(kNow + 12).incremental);
  t.Both([](EventWorld& w) { w.Pod("a8", "1"); });
  EXPECT_TRUE(t.Cycle(kNow + 13).incremental);
}

TEST(ArrivalCycleTest, AGangMemberADeletionANodeAndAFailedBindingEachMakeAFullCycle) {
  Twins t;
  t.Both([](EventWorld& w) {
    w.Node("n1", "4");
    w.Node("n2", "4");
    w.Pod("base", "1", "n1");
  });
  EXPECT_FALSE(t.Cycle(kNow).incremental);
  t.Both([](EventWorld& w) { w.Pod("a1", "1"); });
  EXPECT_TRUE(t.Cycle(kNow + 1).incremental);

  t.Both([](EventWorld& w) { w.Pod("g-0", "1", "", "g"); });
  EXPECT_FALSE(t.Cycle(kNow + 2).incremental) << "a gang member";
  t.Both([](EventWorld& w) { w.Pod("g-1", "1", "", "g"); });
  EXPECT_FALSE(t.Cycle(kNow + 3).incremental) << "a gang member";
  EXPECT_EQ(t.incremental_world.NodeOf("ns/g-1"), t.full_world.NodeOf("ns/g-1"));
  EXPECT_NE(t.incremental_world.NodeOf("ns/g-1"), "");

  t.Both([](EventWorld& w) { w.Delete("ns/a1"); });
  EXPECT_FALSE(t.Cycle(kNow + 4).incremental) << "a deletion";
  t.Both([](EventWorld& w) { w.Node("n3", "4"); });
  EXPECT_FALSE(t.Cycle(kNow + 5).incremental) << "a node";
  t.Both([](EventWorld& w) { w.Pod("a2", "1"); });
  EXPECT_TRUE(t.Cycle(kNow + 6).incremental) << "arrivals only again";

  // A binding sent by an incremental cycle fails: the pod is pending again, and the planner that
  // counted it started is wrong; the next cycle is full and binds it again.
  t.Both([](EventWorld& w) {
    w.async_binds = true;
    w.fail_binds.insert("ns/a3");
    w.Pod("a3", "1");
  });
  EXPECT_TRUE(t.Cycle(kNow + 7).incremental);
  t.Both([](EventWorld& w) {
    w.CompleteBinds();
    w.fail_binds.clear();
  });
  CycleStats s = t.Cycle(kNow + 8);
  EXPECT_FALSE(s.incremental) << "a failed binding";
  EXPECT_EQ(s.bind_errors, 1);
  t.Both([](EventWorld& w) { w.CompleteBinds(); });
  t.Cycle(kNow + 9);
  EXPECT_EQ(t.incremental_world.NodeOf("ns/a3"), t.full_world.NodeOf("ns/a3"));
  EXPECT_NE(t.incremental_world.NodeOf("ns/a3"), "");
}

TEST(ArrivalCycleTest, AnArrivalFromANewAccountMakesAFullCycle) {
  // Without queue.accounts every namespace is a fair-share leaf the planner learns in a full cycle.
  Twins t;
  t.Both([](EventWorld& w) { w.Node("n1", "4"); });
  EXPECT_FALSE(t.Cycle(kNow).incremental);
  t.Both([](EventWorld& w) { w.Pod("a1", "1"); });
  EXPECT_FALSE(t.Cycle(kNow + 1).incremental) << "namespace ns is a new account";
  t.Both([](EventWorld& w) { w.Pod("a2", "1"); });
  EXPECT_TRUE(t.Cycle(kNow + 2).incremental);
}

TEST(ArrivalCycleTest, FullCycleSecondsZeroMakesEveryCycleFull) {
  EventWorld w;
  w.Node("n1", "4");
  Config c = WithFullCycleSeconds(0);
  SchedulingLoop loop(c, &w, &w);
  EXPECT_FALSE(loop.RunCycle(kNow).incremental);
  w.Pod("a1", "1");
  const CycleStats s = loop.RunCycle(kNow + 1);
  EXPECT_FALSE(s.incremental);
  EXPECT_EQ(s.bound, 1);
}

TEST(ArrivalCycleTest, ArrivalCyclesAreCountedInOnequeueArrivalCyclesTotal) {
  SchedulerMetrics metrics;
  auto value = [&](const std::string& name) {
    for (const auto& family : metrics.registry()->Collect()) {
      if (family.name == name && !family.metric.empty()) return family.metric[0].counter.value;
    }
    return -1.0;
  };
  EXPECT_EQ(value("onequeue_arrival_cycles_total"), 0) << "present at zero from the start";
  CycleStats full, arrival;
  arrival.incremental = true;
  metrics.ObserveCycle(full, nullptr, 0.01);
  metrics.ObserveCycle(arrival, nullptr, 0.001);
  metrics.ObserveCycle(arrival, nullptr, 0.001);
  EXPECT_EQ(value("onequeue_cycles_total"), 3);
  EXPECT_EQ(value("onequeue_arrival_cycles_total"), 2);
}

TEST(ArrivalCycleTest, KubeSourceListsThePodsChangedSinceAGeneration) {
  EventWorld w;
  w.Node("n1", "4");
  const uint64_t g = w.State()->generation;
  w.Pod("a", "1");
  w.Pod("b", "1");
  w.Pod("a", "1");  // a again: listed once, as it is now
  std::optional<KubeChanges> c = w.ChangesSince(g);
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->others);
  ASSERT_EQ(c->pods.size(), 2u);
  EXPECT_EQ(c->pods[0]->key, "ns/a");
  EXPECT_EQ(c->pods[1]->key, "ns/b");
  EXPECT_EQ(c->generation, w.State()->generation);
  w.Delete("ns/b");
  EXPECT_TRUE(w.ChangesSince(g)->others) << "a deletion";
  EXPECT_FALSE(w.ChangesSince(w.State()->generation)->others);
  EXPECT_TRUE(w.ChangesSince(w.State()->generation)->pods.empty());
}

}  // namespace
}  // namespace onequeue::scheduler
