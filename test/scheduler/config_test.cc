// The configuration is validated strictly: every error names the key path and the line, and
// several errors are reported at once.
#include "scheduler/config.h"
#include "queue/planner.h"  // ValidateConfig
#include "scheduler/scheduling_loop.h"  // ToQueueConfig
#include "scheduler/slurm_world.h"  // SlurmWorldOptionsOf

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onequeue::scheduler {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kHeader = "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n";

TEST(ConfigTest, MinimalDocumentGetsDefaults) {
  auto c = ParseConfig(kHeader, "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->scheduler_name, "onequeue");
  // The default policy (docs/simulate.md "The default policy").
  EXPECT_EQ(c->queue.reservation_depth, 1);
  EXPECT_EQ(c->queue.resolution_seconds, 1);
  EXPECT_EQ(c->queue.window_seconds, 7 * 86400);
  EXPECT_TRUE(c->queue.backfill_shortest_first);
  EXPECT_EQ(c->queue.full_cycle_seconds, 5);
  EXPECT_EQ(c->queue.usage_half_life_seconds, 12 * 3600);
  EXPECT_FALSE(c->slurm.enabled);
  EXPECT_EQ(c->server.grpc_address, "127.0.0.1:50051");
}

TEST(ConfigTest, FullCycleSecondsIsReadAndMustNotBeNegative) {
  auto c = ParseConfig(std::string(kHeader) + "queue: {fullCycleSeconds: 0}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.full_cycle_seconds, 0);  // every cycle full
  c = ParseConfig(std::string(kHeader) + "queue: {fullCycleSeconds: 30}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.full_cycle_seconds, 30);
  c = ParseConfig(std::string(kHeader) + "queue: {fullCycleSeconds: -1}\n", "mem");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("queue.fullCycleSeconds"));
}

// Issue 24 M4: Slurm's OverTimeLimit for pods.
TEST(ConfigTest, OverTimeLimitSecondsIsReadAndMustNotBeNegative) {
  auto c = ParseConfig(std::string(kHeader) + "queue: {}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.over_time_limit_seconds, 0);  // Slurm's default: ended at the limit
  c = ParseConfig(std::string(kHeader) + "queue: {overTimeLimitSeconds: 120}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.over_time_limit_seconds, 120);
  c = ParseConfig(std::string(kHeader) + "queue: {overTimeLimitSeconds: -1}\n", "mem");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("queue.overTimeLimitSeconds"));
}

// Issue 29: queue.topologyLabels reaches the queue (gang packing); the zone key by default.
TEST(ConfigTest, TopologyLabelsDefaultToTheZoneAndReachTheQueue) {
  auto c = ParseConfig(std::string(kHeader) + "queue: {}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ToQueueConfig(*c).topology_labels, std::vector<std::string>{"topology.kubernetes.io/zone"});
  c = ParseConfig(std::string(kHeader) + "queue: {topologyLabels: [topology.onequeue.io/rack, topology.kubernetes.io/zone]}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ToQueueConfig(*c).topology_labels,
            (std::vector<std::string>{"topology.onequeue.io/rack", "topology.kubernetes.io/zone"}));
  c = ParseConfig(std::string(kHeader) + "queue: {topologyLabels: []}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(ToQueueConfig(*c).topology_labels.empty());
  c = ParseConfig(std::string(kHeader) + "queue: {topologyLabels: [\"a b\"]}\n", "mem");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("queue.topologyLabels"));
}

// Issue 26: the preemption candidate cap, kube-scheduler's names and defaults.
TEST(ConfigTest, PreemptionCandidateCapIsReadAndChecked) {
  auto c = ParseConfig(std::string(kHeader) + "queue: {}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.preemption.min_candidate_nodes_percentage, 10);
  EXPECT_EQ(c->queue.preemption.min_candidate_nodes_absolute, 100);
  c = ParseConfig(std::string(kHeader) +
                      "queue: {preemption: {minCandidateNodesPercentage: 100, minCandidateNodesAbsolute: 0}}\n",
                  "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.preemption.min_candidate_nodes_percentage, 100);
  EXPECT_EQ(c->queue.preemption.min_candidate_nodes_absolute, 0);
  const queue::QueueConfig q = ToQueueConfig(*c);  // what the planner reads
  EXPECT_EQ(q.preemption.min_candidate_nodes_percentage, 100);
  EXPECT_EQ(q.preemption.min_candidate_nodes_absolute, 0);
  for (const char* bad : {"{minCandidateNodesPercentage: 101}", "{minCandidateNodesPercentage: -1}",
                          "{minCandidateNodesAbsolute: -5}",
                          "{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}", "{candidates: 3}"}) {
    c = ParseConfig(std::string(kHeader) + "queue: {preemption: " + bad + "}\n", "mem");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_THAT(c.status().message(), HasSubstr("queue.preemption.")) << bad;
  }
}

// How long a reservation its preemptor cannot use is kept: 60 s unless set, at least 1 s.
TEST(ConfigTest, UnusableReservationSecondsIsReadAndChecked) {
  auto c = ParseConfig(std::string(kHeader) + "queue: {}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.preemption.unusable_reservation_seconds, 60);
  c = ParseConfig(std::string(kHeader) + "queue: {preemption: {unusableReservationSeconds: 20}}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.preemption.unusable_reservation_seconds, 20);
  for (const char* bad : {"0", "-1", "4000000000"}) {
    c = ParseConfig(std::string(kHeader) + "queue: {preemption: {unusableReservationSeconds: " + bad + "}}\n", "mem");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_THAT(c.status().message(), HasSubstr("queue.preemption.unusableReservationSeconds")) << bad;
  }
}

// Issue 27: the starvation controls (docs/queue.md "Starvation").
TEST(ConfigTest, StarvationKeysAreReadAndMustBePositive) {
  auto c = ParseConfig(std::string(kHeader) + "queue: {}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.max_age_seconds, 86400);
  EXPECT_EQ(c->queue.starvation_bound_seconds, 2 * 86400);
  EXPECT_EQ(c->queue.starvation_bound_time_limits, 3);
  EXPECT_EQ(c->queue.starvation_reservations_per_cycle, 100);
  EXPECT_EQ(c->queue.starvation_remedy, "front");  // the default since issue 27's long draws
  EXPECT_FALSE(c->queue.keep_reservations);
  EXPECT_EQ(ToQueueConfig(*c).starvation_remedy, queue::QueueConfig::StarvationRemedy::kFront);
  c = ParseConfig(std::string(kHeader) + "queue: {starvationRemedy: reserve, keepReservations: true}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.starvation_remedy, "reserve");
  EXPECT_TRUE(c->queue.keep_reservations);
  EXPECT_EQ(ToQueueConfig(*c).starvation_remedy, queue::QueueConfig::StarvationRemedy::kReserve);
  c = ParseConfig(std::string(kHeader) + "queue: {starvationRemedy: front-reserve, starvationReservationsPerCycle: 2}\n",
                  "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ToQueueConfig(*c).starvation_remedy, queue::QueueConfig::StarvationRemedy::kFrontReserve);
  EXPECT_EQ(ToQueueConfig(*c).max_starving_reservations, 2);
  c = ParseConfig(std::string(kHeader) +
                      "queue: {maxAgeSeconds: 3600, starvationBoundSeconds: 14400, starvationBoundTimeLimits: 2.5, "
                      "starvationReservationsPerCycle: 7}\n",
                  "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.max_age_seconds, 3600);
  EXPECT_EQ(c->queue.starvation_bound_seconds, 14400);
  EXPECT_EQ(c->queue.starvation_bound_time_limits, 2.5);
  EXPECT_EQ(c->queue.starvation_reservations_per_cycle, 7);
  c = ParseConfig(std::string(kHeader) + "queue: {starvationBoundTimeLimits: 0}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();  // off: only starvationBoundSeconds
  EXPECT_EQ(c->queue.starvation_bound_time_limits, 0);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"maxAgeSeconds: 0", "line 3: queue.maxAgeSeconds: must be at least 1"},
      {"maxAgeSeconds: -5", "line 3: queue.maxAgeSeconds: must be at least 1"},
      {"maxAgeSeconds: two days", "line 3: queue.maxAgeSeconds: has the wrong type: expected an integer"},
      {"maxAgeSeconds: 1.5", "line 3: queue.maxAgeSeconds: has the wrong type: expected an integer"},
      {"maxAgeSeconds: 99999999999", "line 3: queue.maxAgeSeconds: is 99999999999; at most"},
      {"starvationBoundSeconds: 0", "line 3: queue.starvationBoundSeconds: must be at least 1"},
      {"starvationBoundSeconds: -1", "line 3: queue.starvationBoundSeconds: must be at least 1"},
      {"starvationBoundSeconds: [1]", "line 3: queue.starvationBoundSeconds: has the wrong type: expected an integer, found a list"},
      {"starvationBoundSeconds: 99999999999", "line 3: queue.starvationBoundSeconds: is 99999999999; at most"},
      {"starvationBoundTimeLimits: -1", "line 3: queue.starvationBoundTimeLimits: must be 0 (off) to 1000000"},
      {"starvationBoundTimeLimits: .nan", "line 3: queue.starvationBoundTimeLimits: must be a finite number"},
      {"starvationBoundTimeLimits: three", "line 3: queue.starvationBoundTimeLimits: has the wrong type: expected a number"},
      {"starvationReservationsPerCycle: 0", "line 3: queue.starvationReservationsPerCycle: must be 1 to 1000000"},
      {"starvationRemedy: first", "line 3: queue.starvationRemedy: is \"first\"; expected reserve, front or front-reserve"},
      {"starvationRemedy: front_reserve", "queue.starvationRemedy: is \"front_reserve\"; expected reserve, front or front-reserve"},
      {"starvationReservationsPerCycle: 1.5", "line 3: queue.starvationReservationsPerCycle: has the wrong type: expected an integer"},
  };
  for (const auto& [line, message] : bad) {
    c = ParseConfig(std::string(kHeader) + "queue: {" + line + "}\n", "mem");
    ASSERT_FALSE(c.ok()) << line;
    EXPECT_THAT(c.status().message(), HasSubstr(message)) << line;
  }
}

// Issue 27's long draws (docs/queue.md "Beyond the family"): the width scale and the starving
// order, off by default, read into the planner's configuration, validated with the key's name.
TEST(ConfigTest, WidthScaleAndStarvingOrderAreReadAndValidated) {
  auto c = ParseConfig(std::string(kHeader) + "queue: {}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.starvation_bound_width_scale, 0);
  EXPECT_EQ(c->queue.starving_order, "oldest");
  EXPECT_EQ(ToQueueConfig(*c).starving_order, queue::QueueConfig::StarvingOrder::kOldest);
  c = ParseConfig(std::string(kHeader) + "queue: {starvationBoundWidthScale: 0.5, starvingOrder: first-starved}\n",
                  "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ToQueueConfig(*c).starvation_width_scale, 0.5);
  EXPECT_EQ(ToQueueConfig(*c).starving_order, queue::QueueConfig::StarvingOrder::kFirstStarved);
  EXPECT_TRUE(queue::ValidateConfig(ToQueueConfig(*c)).ok());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"starvationBoundWidthScale: -0.1", "line 3: queue.starvationBoundWidthScale: must be 0 (off) to 1"},
      {"starvationBoundWidthScale: 1.5", "line 3: queue.starvationBoundWidthScale: must be 0 (off) to 1"},
      {"starvationBoundWidthScale: wide", "line 3: queue.starvationBoundWidthScale: has the wrong type: expected a number"},
      {"starvingOrder: youngest", "line 3: queue.starvingOrder: is \"youngest\"; expected oldest or first-starved"},
      {"starvationRemedy: reserve, starvationBoundWidthScale: 0.5",
       "queue.starvationBoundWidthScale: acts on the front of the queue: needs starvationRemedy front or front-reserve"},
      {"starvationRemedy: reserve, starvingOrder: first-starved",
       "queue.starvingOrder: acts on the front of the queue: needs starvationRemedy front or front-reserve"},
  };
  for (const auto& [line, message] : bad) {
    c = ParseConfig(std::string(kHeader) + "queue: {" + line + "}\n", "mem");
    ASSERT_FALSE(c.ok()) << line;
    EXPECT_THAT(c.status().message(), HasSubstr(message)) << line;
  }
}

TEST(ConfigTest, FullDocumentIsRead) {
  const std::string doc = std::string(kHeader) + R"(
schedulerName: oq-test
kubernetes: {kubeconfig: /tmp/kc, qps: 200, burst: 400}
slurm:
  enabled: true
  url: unix:///run/slurmrestd.socket
  tokenFile: /var/run/token
  apiVersion: v0.0.38
  lendMechanism: drain
  sharedPartitions: [batch]
  nodeLabel: onequeue.io/slurm-node
  lendAfterSeconds: 30
  returnAfterSeconds: 90
  headroomNodes: 2
  pollIntervalSeconds: 0.5
  firstPollWaitSeconds: 5
  defaultQos: batch
  qosMap: {normal: batch, high: interactive}
  gresResources: {gpu: nvidia.com/gpu}
  scontrolPath: /usr/bin/scontrol
  slurmConf: /etc/slurm/slurm.conf
queue:
  reservationDepth: 1
  resolutionSeconds: 30
  windowSeconds: 3600
  weights: {age: 1000, qos: 10000}
  qos:
    - {name: interactive, priority: 1000, canPreempt: true, preemptible: false}
    - {name: batch, priority: 10, graceSeconds: 30}
leaderElection: {enabled: false}
)";
  auto c = ParseConfig(doc, "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->scheduler_name, "oq-test");
  EXPECT_EQ(c->kubernetes.qps, 200);
  EXPECT_EQ(c->slurm.lend_mechanism, "drain");
  EXPECT_EQ(c->slurm.shared_partitions, std::vector<std::string>{"batch"});
  EXPECT_EQ(c->slurm.node_label, "onequeue.io/slurm-node");
  EXPECT_EQ(c->slurm.lend_after_seconds, 30);
  EXPECT_EQ(c->slurm.return_after_seconds, 90);
  EXPECT_EQ(c->slurm.headroom_nodes, 2);
  EXPECT_EQ(c->slurm.poll_interval_seconds, 0.5);
  EXPECT_EQ(c->slurm.first_poll_wait_seconds, 5);
  EXPECT_EQ(c->slurm.qos_map.at("high"), "interactive");
  EXPECT_EQ(c->slurm.scontrol_path, "/usr/bin/scontrol");
  EXPECT_EQ(c->queue.reservation_depth, 1);
  ASSERT_EQ(c->queue.qos.size(), 2u);
  EXPECT_TRUE(c->queue.qos[0].can_preempt);
  EXPECT_EQ(c->queue.qos[1].grace_seconds, 30);
  EXPECT_EQ(c->queue.weights.at("qos"), 10000);
  EXPECT_FALSE(c->leader_election.enabled);
}

// Issue 25: slurm.partitions.<name>.sharing, exclusive by default, shared by opt-in.
// `shared` is parsed and refused until pods are mirrored in Slurm (docs/sharing.md): the
// snapshot's shared planning is tested in SlurmWorldSharingTest from a SlurmConfig directly.
TEST(ConfigTest, PartitionSharingIsExclusiveByDefaultAndSharedIsAccepted) {
  const std::string slurm = std::string(kHeader) +
                            "slurm: {enabled: true, url: http://127.0.0.1:6820, tokenFile: /t, sharedPartitions: [a, b]";
  auto none = ParseConfig(slurm + "}\n", "f.yaml");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->slurm.partition_sharing.empty());
  auto good = ParseConfig(slurm + ", partitions: {b: {sharing: exclusive}}}\n", "f.yaml");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->slurm.partition_sharing, (std::map<std::string, std::string>{{"b", "exclusive"}}));
  // Issue 25 step 3: pods on shared nodes are mirrored in Slurm (pod_mirror.h), so shared is taken.
  auto shared = ParseConfig(slurm + ", partitions: {a: {sharing: shared}, b: {sharing: exclusive}}}\n", "f.yaml");
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(shared->slurm.partition_sharing,
            (std::map<std::string, std::string>{{"a", "shared"}, {"b", "exclusive"}}));
}

TEST(ConfigTest, BadPartitionSharingIsRefusedNamingTheKeyAndTheAllowedValues) {
  const std::string slurm = std::string(kHeader) +
                            "slurm: {enabled: true, url: http://127.0.0.1:6820, tokenFile: /t, sharedPartitions: [a], ";
  auto bad = ParseConfig(slurm + "partitions: {a: {sharing: both}}}\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("slurm.partitions.a.sharing: is \"both\"; expected exclusive, shared or shared-same-tenant"));
  auto unknown_key = ParseConfig(slurm + "partitions: {a: {sharng: shared}}}\n", "f.yaml");
  ASSERT_FALSE(unknown_key.ok());
  EXPECT_THAT(unknown_key.status().message(), HasSubstr("slurm.partitions.a.sharng: unknown key"));
  auto not_shared = ParseConfig(slurm + "partitions: {z: {sharing: shared}}}\n", "f.yaml");
  ASSERT_FALSE(not_shared.ok());
  EXPECT_THAT(not_shared.status().message(), HasSubstr("slurm.partitions.z: is not in slurm.sharedPartitions"));
  auto wrong_type = ParseConfig(slurm + "partitions: [a]}\n", "f.yaml");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("slurm.partitions must be a mapping"));
}

// Issue 25, docs/sharing.md section 5: slurm.partitions.<p>.gpus: dra names the DeviceClasses of
// Slurm's gpu GRES and the index attribute (default index); device-plugin is the default.
TEST(ConfigTest, PartitionGpusDraIsReadWithItsClassesAndIndexAttribute) {
  const std::string slurm = std::string(kHeader) +
                            "slurm: {enabled: true, url: http://127.0.0.1:6820, tokenFile: /t, sharedPartitions: [a, b], ";
  auto none = ParseConfig(slurm + "partitions: {a: {sharing: shared}}}\n", "f.yaml");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->slurm.partition_dra_gpus.empty());
  auto dra = ParseConfig(slurm + "partitions: {a: {sharing: shared, gpus: dra, gpuDeviceClasses: [gpu.example.com]},"
                                 " b: {sharing: shared-same-tenant, gpus: dra, gpuDeviceClasses: [g1, g2],"
                                 " gpuIndexAttribute: gpu.example.com/index}}}\n",
                         "f.yaml");
  ASSERT_TRUE(dra.ok()) << dra.status();
  EXPECT_EQ(dra->slurm.partition_dra_gpus.at("a"), (SlurmConfig::DraGpus{{"gpu.example.com"}, "index"}));
  EXPECT_EQ(dra->slurm.partition_dra_gpus.at("b"), (SlurmConfig::DraGpus{{"g1", "g2"}, "gpu.example.com/index"}));
  auto plugin = ParseConfig(slurm + "partitions: {a: {sharing: shared, gpus: device-plugin}}}\n", "f.yaml");
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  EXPECT_TRUE(plugin->slurm.partition_dra_gpus.empty());
}

TEST(ConfigTest, BadPartitionGpusAreRefusedNamingTheKeyAndWhy) {
  const std::string slurm = std::string(kHeader) +
                            "slurm: {enabled: true, url: http://127.0.0.1:6820, tokenFile: /t, sharedPartitions: [a], ";
  auto Error = [&](const std::string& partitions) {
    auto c = ParseConfig(slurm + "partitions: {a: " + partitions + "}}\n", "f.yaml");
    return c.ok() ? std::string("<accepted>") : std::string(c.status().message());
  };
  EXPECT_THAT(Error("{sharing: shared, gpus: mig}"),
              HasSubstr("slurm.partitions.a.gpus: is \"mig\"; expected device-plugin or dra"));
  EXPECT_THAT(Error("{sharing: shared, gpus: dra}"),
              HasSubstr("slurm.partitions.a.gpuDeviceClasses: must name at least one DeviceClass"));
  EXPECT_THAT(Error("{sharing: shared, gpus: dra, gpuDeviceClasses: [\"\"]}"),
              HasSubstr("slurm.partitions.a.gpuDeviceClasses: must name at least one DeviceClass"));
  EXPECT_THAT(Error("{sharing: exclusive, gpus: dra, gpuDeviceClasses: [g]}"),
              HasSubstr("slurm.partitions.a.gpus: dra is only for a shared partition"));
  EXPECT_THAT(Error("{gpus: dra, gpuDeviceClasses: [g]}"), HasSubstr("dra is only for a shared partition"));
  EXPECT_THAT(Error("{sharing: shared, gpuDeviceClasses: [g]}"),
              HasSubstr("slurm.partitions.a.gpuDeviceClasses: is only read with gpus: dra"));
  EXPECT_THAT(Error("{sharing: shared, gpus: dra, gpuDeviceClasses: [g], gpuIndexAttribute: \"\"}"),
              HasSubstr("slurm.partitions.a.gpuIndexAttribute: must not be empty"));
  EXPECT_THAT(Error("{sharing: shared, gpus: dra, gpuDeviceClasses: g}"),
              HasSubstr("slurm.partitions.a.gpuDeviceClasses: has the wrong type"));
}

// Issue 25: sharing.onLostMirror, remake by default, evict accepted, anything else refused.
TEST(ConfigTest, SharingOnLostMirrorIsRemakeByDefaultEvictIsAcceptedAndOtherValuesAreRefused) {
  auto none = ParseConfig(std::string(kHeader), "f.yaml");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->sharing.on_lost_mirror, "remake");
  auto evict = ParseConfig(std::string(kHeader) + "sharing: {onLostMirror: evict}\n", "f.yaml");
  ASSERT_TRUE(evict.ok()) << evict.status();
  EXPECT_EQ(evict->sharing.on_lost_mirror, "evict");
  auto bad = ParseConfig(std::string(kHeader) + "sharing: {onLostMirror: report}\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("sharing.onLostMirror: is \"report\"; expected remake or evict"));
  auto unknown = ParseConfig(std::string(kHeader) + "sharing: {onLostMirrors: evict}\n", "f.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("sharing.onLostMirrors: unknown key"));
}

// Issue 25 tenancy: shared-same-tenant is a third sharing mode; sharing.tenants maps namespaces and
// Slurm accounts to tenants, each tenant named once and each namespace and account in one tenant;
// unlisted work is a tenant of its own; a pod's placeholder goes under its tenant's first account.
TEST(ConfigTest, SharedSameTenantAndTenantsAreReadAndChecked) {
  const std::string slurm = std::string(kHeader) +
                            "slurm: {enabled: true, url: http://127.0.0.1:6820, tokenFile: /t, sharedPartitions: [a], "
                            "partitions: {a: {sharing: shared-same-tenant}}}\n";
  auto good = ParseConfig(slurm +
                              "sharing: {tenants: [{name: physics, namespaces: [phys, phys-dev], accounts: [physics]},"
                              " {name: chemistry, namespaces: [chem]}]}\n",
                          "f.yaml");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->slurm.partition_sharing.at("a"), "shared-same-tenant");
  ASSERT_EQ(good->sharing.tenants.size(), 2u);
  EXPECT_EQ(good->sharing.tenants[0].name, "physics");
  EXPECT_EQ(good->sharing.tenants[0].namespaces, (std::vector<std::string>{"phys", "phys-dev"}));
  EXPECT_EQ(good->sharing.tenants[0].accounts, std::vector<std::string>{"physics"});
  EXPECT_EQ(TenantOfNamespace(good->sharing, "phys-dev"), "physics");
  EXPECT_EQ(TenantOfAccount(good->sharing, "physics"), "physics");
  EXPECT_EQ(TenantOfNamespace(good->sharing, "other"), "namespace/other");
  EXPECT_EQ(TenantOfAccount(good->sharing, "other"), "account/other");
  EXPECT_EQ(PlaceholderAccountOf(good->sharing, "phys"), "physics");
  EXPECT_EQ(PlaceholderAccountOf(good->sharing, "chem"), "");   // a tenant without accounts
  EXPECT_EQ(PlaceholderAccountOf(good->sharing, "other"), "");  // no tenant
  const SlurmWorldOptions world = SlurmWorldOptionsOf(*good);
  EXPECT_EQ(world.sharing_partitions, std::set<std::string>{"a"});
  EXPECT_EQ(world.same_tenant_partitions, std::set<std::string>{"a"});

  auto twice = ParseConfig(slurm + "sharing: {tenants: [{name: x, namespaces: [n]}, {name: x, namespaces: [m]}]}\n",
                           "f.yaml");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("sharing.tenants[1].name: \"x\" is defined twice"));
  auto both = ParseConfig(slurm + "sharing: {tenants: [{name: x, namespaces: [n]}, {name: y, namespaces: [n]}]}\n",
                          "f.yaml");
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("sharing.tenants[1].namespaces: \"n\" is already in tenant \"x\""));
  auto account = ParseConfig(slurm + "sharing: {tenants: [{name: x, accounts: [a]}, {name: y, accounts: [a]}]}\n",
                             "f.yaml");
  ASSERT_FALSE(account.ok());
  EXPECT_THAT(account.status().message(), HasSubstr("sharing.tenants[1].accounts: \"a\" is already in tenant \"x\""));
  auto nameless = ParseConfig(slurm + "sharing: {tenants: [{namespaces: [n]}]}\n", "f.yaml");
  ASSERT_FALSE(nameless.ok());
  EXPECT_THAT(nameless.status().message(), HasSubstr("sharing.tenants[0].name: is required"));
  auto unknown = ParseConfig(slurm + "sharing: {tenants: [{name: x, namespace: [n]}]}\n", "f.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("sharing.tenants[0].namespace: unknown key"));
  auto not_list = ParseConfig(slurm + "sharing: {tenants: {name: x}}\n", "f.yaml");
  ASSERT_FALSE(not_list.ok());
  EXPECT_THAT(not_list.status().message(), HasSubstr("sharing.tenants: must be a list"));
}

TEST(ConfigTest, LendingThatCannotWorkIsRefusedWithTheReason) {
  const std::string slurm = std::string(kHeader) +
                            "slurm: {enabled: true, url: http://127.0.0.1:6820, tokenFile: /t, sharedPartitions: [b], ";
  auto drain = ParseConfig(slurm + "lendMechanism: drain}\n", "f.yaml");
  ASSERT_FALSE(drain.ok());
  EXPECT_THAT(drain.status().message(), HasSubstr("slurm.scontrolPath: is required with lendMechanism drain"));
  auto pod = ParseConfig(slurm + "lendMechanism: slurmd-pod}\n", "f.yaml");
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(pod.status().message(), HasSubstr("slurmd-pod is not implemented by the daemon yet"));
  auto no_partitions = ParseConfig(std::string(kHeader) +
                                       "slurm: {enabled: true, url: http://127.0.0.1:6820, tokenFile: /t}\n",
                                   "f.yaml");
  ASSERT_FALSE(no_partitions.ok());
  EXPECT_THAT(no_partitions.status().message(), HasSubstr("slurm.sharedPartitions: must name at least one"));
  auto negative = ParseConfig(slurm + "lendAfterSeconds: -1}\n", "f.yaml");
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("slurm.lendAfterSeconds: must be 0 or more"));
}

TEST(ConfigTest, UnknownKeyIsAnErrorWithItsPathAndLine) {
  auto c = ParseConfig(std::string(kHeader) + "queue:\n  reservationDepht: 3\n", "f.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("f.yaml"));
  EXPECT_THAT(c.status().message(), HasSubstr("line 4: queue.reservationDepht: unknown key"));
}

TEST(ConfigTest, WrongTypeNamesTheExpectedType) {
  auto c = ParseConfig(std::string(kHeader) + "queue:\n  reservationDepth: many\n", "f.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("line 4: queue.reservationDepth: has the wrong type: expected an integer"));
}

TEST(ConfigTest, AllErrorsAreReportedAtOnce) {
  auto c = ParseConfig(std::string(kHeader) + R"(slurm: {enabled: true, lendMechanism: borrow}
queue:
  weights: {age: -1, luck: 3}
  qos: [{name: a}, {name: a}]
)", "f.yaml");
  ASSERT_FALSE(c.ok());
  const std::string m(c.status().message());
  EXPECT_THAT(m, HasSubstr("slurm.url: is required"));
  EXPECT_THAT(m, HasSubstr("slurm.tokenFile: is required"));
  EXPECT_THAT(m, HasSubstr("slurm.lendMechanism: is \"borrow\""));
  EXPECT_THAT(m, HasSubstr("factor \"age\" must not be negative"));
  EXPECT_THAT(m, HasSubstr("unknown factor \"luck\""));
  EXPECT_THAT(m, HasSubstr("\"a\" is defined twice"));
}

TEST(ConfigTest, WrongApiVersionOrKindIsRefused) {
  auto c = ParseConfig("apiVersion: v2\nkind: SchedulerConfiguration\n", "f.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("apiVersion: is \"v2\"; this build reads \"onequeue.io/v1alpha1\""));
  c = ParseConfig("apiVersion: onequeue.io/v1alpha1\nkind: Pod\n", "f.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("kind: is \"Pod\""));
}

TEST(ConfigTest, SyntaxErrorGivesLineAndColumn) {
  auto c = ParseConfig(std::string(kHeader) + "queue: [1, 2\n", "f.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("f.yaml: line"));
  EXPECT_THAT(c.status().message(), HasSubstr("not valid YAML"));
}

TEST(ConfigTest, EmptyAndNonMappingDocumentsAreRefused) {
  EXPECT_THAT(ParseConfig("", "f.yaml").status().message(), HasSubstr("the file is empty"));
  EXPECT_FALSE(ParseConfig("- a\n- b\n", "f.yaml").ok());
  EXPECT_FALSE(ParseConfig(std::string(kHeader) + "queue: 3\n", "f.yaml").ok());
}

// Issue 13 defect 1: per-namespace QOS and account policy, like Slurm's associations.
TEST(ConfigTest, NamespacePoliciesAreReadAndChecked) {
  auto c = ParseConfig(std::string(kHeader) + R"(queue:
  qos: [{name: interactive, priority: 1000, canPreempt: true}, {name: normal, priority: 100}]
  namespacePolicies:
    - {namespace: team-a, allowedQos: [normal], defaultQos: normal, allowedAccounts: [a, b], defaultAccount: a}
    - {namespace: "*", allowedQos: [normal]}
)", "f.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->queue.namespace_policies.size(), 2u);
  const NamespacePolicyConfig& a = c->queue.namespace_policies[0];
  EXPECT_EQ(a.namespace_, "team-a");
  EXPECT_THAT(a.allowed_qos, ::testing::ElementsAre("normal"));
  EXPECT_EQ(a.default_qos, "normal");
  EXPECT_THAT(a.allowed_accounts, ::testing::ElementsAre("a", "b"));
  EXPECT_EQ(a.default_account, "a");
  EXPECT_EQ(c->queue.namespace_policies[1].namespace_, "*");
}

// Slurm on with a QOS table: slurm.defaultQos (default "batch") and qosMap's targets are in it, or
// every Slurm job mapped outside it would be held (QOSNotAllowed) with no word at start. With Slurm
// off, or with no table, they are not checked.
TEST(ConfigTest, SlurmQosNamesMustBeInTheQosTable) {
  const std::string slurm = R"(slurm:
  enabled: true
  url: http://127.0.0.1:6820
  tokenFile: /t
  sharedPartitions: [pool]
  lendMechanism: placeholder
)";
  auto c = ParseConfig(std::string(kHeader) + slurm + R"(  qosMap: {high: gold, low: normal}
queue:
  qos: [{name: normal}, {name: urgent}]
)", "f.yaml");
  ASSERT_FALSE(c.ok());
  const std::string m(c.status().message());
  EXPECT_THAT(m, HasSubstr("slurm.defaultQos: is \"batch\", which is not in queue.qos (queue.qos has normal, urgent)"));
  EXPECT_THAT(m, HasSubstr("slurm.qosMap: maps Slurm QOS \"high\" to \"gold\", which is not in queue.qos"));
  EXPECT_THAT(m, Not(HasSubstr("\"low\"")));
  c = ParseConfig(std::string(kHeader) + slurm + R"(  defaultQos: normal
  qosMap: {high: urgent}
queue:
  qos: [{name: normal}, {name: urgent}]
)", "f.yaml");
  EXPECT_TRUE(c.ok()) << c.status();
  c = ParseConfig(std::string(kHeader) + slurm + "  qosMap: {high: gold}\n", "f.yaml");
  EXPECT_TRUE(c.ok()) << "no QOS table: " << c.status();
  c = ParseConfig(std::string(kHeader) + "slurm: {enabled: false, defaultQos: gold}\nqueue: {qos: [{name: normal}]}\n", "f.yaml");
  EXPECT_TRUE(c.ok()) << "Slurm off: " << c.status();
}

TEST(ConfigTest, BadNamespacePoliciesGiveClearErrors) {
  auto c = ParseConfig(std::string(kHeader) + R"(queue:
  qos: [{name: normal}]
  namespacePolicies:
    - {allowedQos: [gold]}
    - {namespace: x, defaultQos: silver}
    - {namespace: x, allowedQos: [normal], defaultAccount: c, allowedAccounts: [a], color: red}
    - {namespace: y, allowedQos: normal}
)", "f.yaml");
  ASSERT_FALSE(c.ok());
  const std::string m(c.status().message());
  EXPECT_THAT(m, HasSubstr("queue.namespacePolicies[0].namespace: is required"));
  EXPECT_THAT(m, HasSubstr("queue.namespacePolicies[0].allowedQos: names QOS \"gold\", which is not in queue.qos"));
  EXPECT_THAT(m, HasSubstr("queue.namespacePolicies[1].defaultQos: is \"silver\", which is not in queue.qos"));
  EXPECT_THAT(m, HasSubstr("queue.namespacePolicies[2].namespace: \"x\" has two policies"));
  EXPECT_THAT(m, HasSubstr("queue.namespacePolicies[2].defaultAccount: is \"c\", which is not in allowedAccounts"));
  EXPECT_THAT(m, HasSubstr("queue.namespacePolicies[2].color: unknown key"));
  EXPECT_THAT(m, HasSubstr("queue.namespacePolicies[3].allowedQos: has the wrong type: expected a list of strings"));
  EXPECT_FALSE(ParseConfig(std::string(kHeader) + "queue:\n  namespacePolicies: {a: 1}\n", "f.yaml").ok());
}

TEST(ConfigTest, UnreadableFileNamesThePath) {
  auto c = LoadConfigFile("/nonexistent/onequeue.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/onequeue.yaml: cannot read the configuration file"));
}

// Issue 13 defect 9: a key of the wrong YAML kind (a mapping where a number goes, a list for a
// string, a mapping as a key) is an error that names the key and what it found; never an abort.
TEST(ConfigTest, WrongYamlKindsAreErrorsNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"kubernetes: {qps: {a: 1}}", "kubernetes.qps: has the wrong type: expected a number, found a mapping"},
      {"kubernetes: {burst: [1, 2]}", "kubernetes.burst: has the wrong type: expected an integer, found a list"},
      {"schedulerName: [a, b]", "schedulerName: has the wrong type: expected a string, found a list"},
      {"slurm: {sharedPartitions: {a: b}}", "slurm.sharedPartitions: has the wrong type: expected a list of strings, found a mapping"},
      {"queue: {weights: [1]}", "queue.weights: has the wrong type: expected a mapping of names to numbers, found a list"},
      {"queue: {weights: {age: [1]}}", "queue.weights: has the wrong type: expected a mapping of names to numbers"},
      {"queue: {qos: {name: x}}", "queue.qos: must be a list"},
      {"queue: {qos: [[1]]}", "queue.qos[0] must be a mapping"},
      {"server: [a]", "server must be a mapping"},
      {"? [a, b]\n: 1", "document: a key must be a plain name, not a list"},
      {"kubernetes:\n  ? {x: 1}\n  : 2", "kubernetes: a key must be a plain name, not a mapping"},
      {"leaderElection: {enabled: {yes: no}}", "leaderElection.enabled: has the wrong type: expected true or false, found a mapping"},
  };
  for (const auto& [body, message] : cases) {
    SCOPED_TRACE(body);
    auto c = ParseConfig(std::string(kHeader) + body + "\n", "mem");
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(message));
  }
  // A document that is a list or a scalar, or nested far too deep: an error, not an abort.
  for (const std::string& doc : {std::string("- a\n- b\n"), std::string("just text\n"),
                                std::string(20000, '[') + std::string(20000, ']')}) {
    EXPECT_FALSE(ParseConfig(doc, "mem").ok());
  }
}

// .nan and .inf are numbers to YAML, and NaN slips past every "x < min" check: each number key
// refuses them; QPS and burst must be positive.
TEST(ConfigTest, NanInfAndNonPositiveRatesAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"kubernetes: {qps: .nan}", "kubernetes.qps: must be a finite number (not .nan or .inf)"},
      {"kubernetes: {qps: .inf}", "kubernetes.qps: must be a finite number"},
      {"kubernetes: {qps: -.inf}", "kubernetes.qps: must be a finite number"},
      {"kubernetes: {qps: 0}", "kubernetes.qps: must be greater than 0"},
      {"kubernetes: {qps: -5}", "kubernetes.qps: must be greater than 0"},
      {"kubernetes: {burst: 0}", "kubernetes.burst: must be at least 1"},
      {"kubernetes: {burst: -3}", "kubernetes.burst: must be at least 1"},
      {"kubernetes: {burst: 99999999999999999999}", "kubernetes.burst: has the wrong type: expected an integer, found a scalar"},
      {"slurm: {pollIntervalSeconds: .nan}", "slurm.pollIntervalSeconds: must be a finite number"},
      {"slurm: {firstPollWaitSeconds: -1}", "slurm.firstPollWaitSeconds: must be from 0 to 3600"},
      {"queue: {weights: {age: .nan}}", "queue.weights: \"age\" must be a finite number"},
      {"queue: {accounts: [{name: a, shares: .inf}]}", "queue.accounts[0].shares: must be a finite number"},
      {"queue: {windowSeconds: 9223372036854775807}", "queue.windowSeconds: is 9223372036854775807; at most"},
      {"queue: {qos: [{name: q, graceSeconds: 4000000000}]}", "queue.qos[0].graceSeconds: is 4000000000; at most"},
      {"leaderElection: {leaseDurationSeconds: 9223372036854775807}", "leaderElection.leaseDurationSeconds: is"},
  };
  for (const auto& [body, message] : cases) {
    SCOPED_TRACE(body);
    auto c = ParseConfig(std::string(kHeader) + body + "\n", "mem");
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(message));
  }
}

// The Slurm JWT goes in a header: plain http is for loopback only, unless the admin says the path
// is trusted (slurm.allowInsecureHttp).
TEST(ConfigTest, PlainHttpToAnotherHostIsRefusedUnlessAllowed) {
  const std::string slurm = "slurm: {enabled: true, tokenFile: /t, sharedPartitions: [batch], ";
  for (const std::string url : {"http://slurmrestd:6820", "http://10.0.0.5:6820", "http://127.0.0.1.evil.example:6820",
                                "http://[fe80::1]:6820/", "http://user@slurm.example"}) {
    SCOPED_TRACE(url);
    auto c = ParseConfig(std::string(kHeader) + slurm + "url: \"" + url + "\"}\n", "mem");
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(), HasSubstr("slurm.url: is \"" + url + "\": plain http to a host other than "
                                                "loopback would send the Slurm JWT in clear"));
    EXPECT_THAT(c.status().message(), HasSubstr("slurm.allowInsecureHttp: true"));
    auto allowed = ParseConfig(std::string(kHeader) + slurm + "url: \"" + url + "\", allowInsecureHttp: true}\n", "mem");
    EXPECT_TRUE(allowed.ok()) << allowed.status();
    EXPECT_TRUE(allowed->slurm.allow_insecure_http);
  }
  for (const std::string url : {"http://127.0.0.1:6820", "http://localhost:6820", "http://[::1]:6820",
                                "https://slurmrestd:6820", "unix:///run/slurmrestd.socket"}) {
    SCOPED_TRACE(url);
    auto c = ParseConfig(std::string(kHeader) + slurm + "url: \"" + url + "\"}\n", "mem");
    EXPECT_TRUE(c.ok()) << c.status();
  }
}

// Issue 13 defect 9: the gRPC API listens beyond loopback only when admin calls need a token.
TEST(ConfigTest, GrpcBeyondLoopbackNeedsTheAdminToken) {
  for (const std::string address : {"0.0.0.0:50051", "[::]:50051", "10.1.2.3:50051", ":50051"}) {
    SCOPED_TRACE(address);
    auto c = ParseConfig(std::string(kHeader) + "server: {grpcAddress: \"" + address + "\"}\n", "mem");
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()),
                HasSubstr("server.grpcAddress: is \"" + address + "\": listening beyond loopback needs server.adminTokenFile"));
    auto with_token = ParseConfig(
        std::string(kHeader) + "server: {grpcAddress: \"" + address + "\", adminTokenFile: /t, tlsCertFile: /c, tlsKeyFile: /k}\n",
        "mem");
    EXPECT_TRUE(with_token.ok()) << with_token.status();
  }
  for (const std::string address : {"127.0.0.1:0", "localhost:50051", "[::1]:50051", "unix:///run/oq.sock"}) {
    SCOPED_TRACE(address);
    auto c = ParseConfig(std::string(kHeader) + "server: {grpcAddress: \"" + address + "\"}\n", "mem");
    EXPECT_TRUE(c.ok()) << c.status();
  }
}

// Issue 13 defect 9: TLS for the gRPC API needs both files; bounded API responses.
TEST(ConfigTest, TlsNeedsCertificateAndKeyTogether) {
  auto both = ParseConfig(std::string(kHeader) + "server: {tlsCertFile: /c.pem, tlsKeyFile: /k.pem}\n", "mem");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->server.tls_cert_file, "/c.pem");
  EXPECT_EQ(both->server.tls_key_file, "/k.pem");
  auto cert_only = ParseConfig(std::string(kHeader) + "server: {tlsCertFile: /c.pem}\n", "mem");
  ASSERT_FALSE(cert_only.ok());
  EXPECT_THAT(std::string(cert_only.status().message()),
              HasSubstr("server.tlsCertFile: is set without its pair: TLS needs both server.tlsCertFile and server.tlsKeyFile"));
  auto key_only = ParseConfig(std::string(kHeader) + "server: {tlsKeyFile: /k.pem}\n", "mem");
  ASSERT_FALSE(key_only.ok());
  EXPECT_THAT(std::string(key_only.status().message()), HasSubstr("server.tlsKeyFile: is set without its pair"));
}

TEST(ConfigTest, MaxResponseBytesIsBounded) {
  auto def = ParseConfig(std::string(kHeader), "mem");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->kubernetes.max_response_bytes, int64_t{256} << 20);
  auto set = ParseConfig(std::string(kHeader) + "kubernetes: {maxResponseBytes: 67108864}\n", "mem");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->kubernetes.max_response_bytes, 67108864);
  for (const std::string v : {"1000", "-1", "68719476737"}) {
    auto bad = ParseConfig(std::string(kHeader) + "kubernetes: {maxResponseBytes: " + v + "}\n", "mem");
    ASSERT_FALSE(bad.ok()) << v;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("kubernetes.maxResponseBytes: must be from 1048576"));
  }
}

// Issue 26: the HTTP client under the Kubernetes client is chosen by kubernetes.httpClient.
TEST(ConfigTest, HttpClientIsAutoCurlOrNghttp2) {
  auto def = ParseConfig(std::string(kHeader), "mem");
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->kubernetes.http_client, "auto");
  for (const std::string v : {"auto", "curl", "nghttp2"}) {
    auto set = ParseConfig(std::string(kHeader) + "kubernetes: {httpClient: " + v + "}\n", "mem");
    ASSERT_TRUE(set.ok()) << v << ": " << set.status();
    EXPECT_EQ(set->kubernetes.http_client, v);
  }
  for (const std::string v : {"libcurl", "h2", "\"\""}) {
    auto bad = ParseConfig(std::string(kHeader) + "kubernetes: {httpClient: " + v + "}\n", "mem");
    ASSERT_FALSE(bad.ok()) << v;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("kubernetes.httpClient: is "));
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("must be auto, curl or nghttp2"));
  }
}

// Issue 24 (secure defaults): an admin token is never sent in clear. server.adminTokenFile without
// TLS is refused with the reason, unless server.allowInsecureAdminToken says so (local tests);
// a unix socket never leaves the host and needs no TLS.
TEST(ConfigTest, AnAdminTokenWithoutTlsIsRefusedUnlessExplicitlyAllowed) {
  auto plain = ParseConfig(std::string(kHeader) + "server: {grpcAddress: \"127.0.0.1:50051\", adminTokenFile: /t}\n", "mem");
  ASSERT_FALSE(plain.ok());
  EXPECT_THAT(std::string(plain.status().message()),
              HasSubstr("server.adminTokenFile: is set but the gRPC API has no TLS"));
  auto beyond = ParseConfig(std::string(kHeader) + "server: {grpcAddress: \"0.0.0.0:50051\", adminTokenFile: /t}\n", "mem");
  EXPECT_FALSE(beyond.ok());
  auto tls = ParseConfig(std::string(kHeader) +
                             "server: {grpcAddress: \"0.0.0.0:50051\", adminTokenFile: /t, tlsCertFile: /c, tlsKeyFile: /k}\n",
                         "mem");
  EXPECT_TRUE(tls.ok()) << tls.status();
  auto allowed = ParseConfig(std::string(kHeader) +
                                 "server: {grpcAddress: \"127.0.0.1:50051\", adminTokenFile: /t, allowInsecureAdminToken: true}\n",
                             "mem");
  EXPECT_TRUE(allowed.ok()) << allowed.status();
  auto socket = ParseConfig(std::string(kHeader) + "server: {grpcAddress: \"unix:///run/oq.sock\", adminTokenFile: /t}\n", "mem");
  EXPECT_TRUE(socket.ok()) << socket.status();
  // No token: nothing to protect, plaintext on loopback as before.
  EXPECT_TRUE(ParseConfig(std::string(kHeader) + "server: {grpcAddress: \"127.0.0.1:50051\"}\n", "mem").ok());
}

}  // namespace
}  // namespace onequeue::scheduler

namespace onequeue::scheduler {
namespace {

// Issue 29: queue.tresBillingWeights as Slurm's TRESBillingWeights (its string, or a mapping),
// usageChargeSeconds and usageConfigMap; every mistake named.
TEST(ConfigTest, TresBillingWeightsReadAsSlurmWritesThemOrAsAMapping) {
  auto c = ParseConfig(kHeader, "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.tres_billing_weights, TresBillingWeights{});  // CPU 1 only: the figures of before
  EXPECT_EQ(c->queue.tres_billing_weights.cpu, 1);
  EXPECT_EQ(c->queue.usage_charge_seconds, 60);
  EXPECT_EQ(c->queue.usage_config_map, "onequeue-usage");

  c = ParseConfig(std::string(kHeader) + "queue:\n  tresBillingWeights: {cpu: 1.0, mem: 0.25G, gres/gpu: 4.0}\n"
                                         "  usageChargeSeconds: 5\n  usageConfigMap: ''\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->queue.tres_billing_weights.cpu, 1.0);
  EXPECT_DOUBLE_EQ(c->queue.tres_billing_weights.mem_per_mb, 0.25 / 1024);  // 0.25 per GB
  EXPECT_EQ(c->queue.tres_billing_weights.gres, (std::map<std::string, double>{{"gpu", 4.0}}));
  EXPECT_EQ(c->queue.usage_charge_seconds, 5);
  EXPECT_EQ(c->queue.usage_config_map, "");

  // Slurm's own line, names in any case; what is not listed is not billed (as in Slurm).
  c = ParseConfig(std::string(kHeader) + "queue: {tresBillingWeights: \"Mem=2,GRES/gpu:a100=8\"}\n", "mem");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue.tres_billing_weights.cpu, 0);
  EXPECT_DOUBLE_EQ(c->queue.tres_billing_weights.mem_per_mb, 2);  // no unit: per MB
  EXPECT_EQ(c->queue.tres_billing_weights.gres, (std::map<std::string, double>{{"gpu:a100", 8}}));
}

TEST(ConfigTest, BadTresBillingWeightsAreRefusedSayingWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{cpu: -1}", "must not be negative"},
      {"{cpu: 2G}", "a unit suffix (K, M, G, T) is allowed on mem only"},
      {"{mem: 1X}", "the unit must be K, M, G or T"},
      {"{cpu: lots}", "the weight must be a number"},
      {"{license/matlab: 1}", "unknown TRES \"license/matlab\": onequeue bills cpu, mem or gres/NAME"},
      {"{cpu: 1, CPU: 2}", "name the same TRES"},
      {"\"CPU=1,Mem\"", "expected NAME=WEIGHT"},
      {"\"CPU=1,CPU=2\"", "is given twice"},
      {"[cpu]", "must be a mapping of TRES to weights"},
      {"{}", "no weights given"},
      {"{cpu: .nan}", "the weight must be a number"},
  };
  for (const auto& [value, why] : cases) {
    SCOPED_TRACE(value);
    auto c = ParseConfig(std::string(kHeader) + "queue:\n  tresBillingWeights: " + value + "\n", "mem");
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(), HasSubstr("line 4: queue.tresBillingWeights: "));
    EXPECT_THAT(c.status().message(), HasSubstr(why));
  }
  auto c = ParseConfig(std::string(kHeader) + "queue: {usageChargeSeconds: 0}\n", "mem");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("queue.usageChargeSeconds: must be 1 to 86400"));
  c = ParseConfig(std::string(kHeader) + "queue: {usageConfigMap: Usage_Map}\n", "mem");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("queue.usageConfigMap: \"Usage_Map\" is not a ConfigMap name"));
}

}  // namespace
}  // namespace onequeue::scheduler
