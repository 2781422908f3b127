// The StackHPC scenario (docs/stackhpc-scenario.md): a pool of GPU nodes busy with Slurm work,
// interactive "Jupyter" pods arriving at a fixed rate, each needing a whole node. Run one of four
// ways on the real control plane and the local Slurm, and measured the same way each time:
//
//   kube-scheduler      worker pods and interactive pods both scheduled by kube-scheduler;
//   two-schedulers      worker pods by a second kube-scheduler instance, interactive pods by the
//                       cluster's (kubernetes/kubernetes#130429);
//   onequeue-workers    both by onequeue (the worker StatefulSet's pods are onequeue workloads);
//   onequeue-lending    no worker pods: onequeue lends the nodes to the Slurm jobs directly.
//
// Worker pods stand in for a Slinky NodeSet: a StatefulSet (priorityClass value -1, all GPUs of a
// node, required podAntiAffinity against the interactive app) run by the controller-manager. The
// driver plays Slinky's part for them: a Slurm node is up while a worker pod runs on its
// Kubernetes node; when the worker goes, the node is drained and the jobs on it requeued (what
// slurmctld does when a slurmd dies under --requeue jobs).
//
// Everything the driver measures comes from the API and from scontrol: pods by UID, bind times
// observed every 200 ms, workers deleted (evictions), Slurm restarts (requeues).
#ifndef ONEQUEUE_TEST_E2E_STACKHPC_SCENARIO_H_
#define ONEQUEUE_TEST_E2E_STACKHPC_SCENARIO_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/k8s_cluster.h"
#include "common/slurm_cluster.h"
#include "k8s_client/rest_client.h"

namespace onequeue::e2e::stackhpc {

enum class Way { kKubeScheduler, kTwoSchedulers, kOnequeueWorkers, kOnequeueLending };
std::string WayName(Way way);
bool HasWorkerPods(Way way);  // every way but onequeue-lending

struct ScenarioOptions {
  int nodes = 4;         // pool GPU nodes, standing for Slurm nodes n1..nN
  int gpus = 4;          // nvidia.com/gpu per node = Gres=gpu:<gpus>; every pod and job asks all
  int interactive = 3;   // interactive pods created, one every `interval`
  absl::Duration interval = absl::Seconds(5);
  // The measured window, from the first interactive pod. At its end the interactive pods still
  // waiting are deleted (their users gave up) and the Slurm backlog that never started withdrawn.
  absl::Duration bound = absl::Seconds(45);
  // Then requeued jobs get this long to run again to COMPLETED.
  absl::Duration settle = absl::Seconds(240);  // Slurm 22.05 delays a requeued job's start by 120 s
  int job_seconds = 15;  // each Slurm batch job sleeps this long
  std::string lend_mechanism = "drain";  // onequeue-lending: slurm.lendMechanism
  // The worker pods' controller: "statefulset" (Slinky's NodeSet keeps one pod per ordinal: the
  // replacement is created only once the victim is gone) or "deployment" (a ReplicaSet creates the
  // replacement as soon as the victim starts terminating).
  std::string worker_controller = "statefulset";
  std::string output_dir;  // non-empty: <way>.timeline.csv and <way>.summary.json written there
};

// One observation per second of the window: the plot's data.
struct Sample {
  double seconds = 0;  // since the first interactive pod
  int evictions = 0;   // so far: worker pods deleted + Slurm jobs requeued by a reclaim
  int waiting_interactive = 0;
  int slurm_running = 0;
};

struct ScenarioResult {
  std::string way;
  int interactive_created = 0;
  int interactive_bound = 0;
  std::vector<double> bind_seconds;  // creation -> bound, of the bound ones
  int worker_evictions = 0;          // worker pods deleted (nobody else deletes them)
  // Worker ordinals (worker-K) evicted more than once: the loop, seen from the victim's side.
  int workers_evicted_repeatedly = 0;
  int max_evictions_of_one_worker = 0;
  // A worker pod bound to a node a worker was evicted from for an interactive pod, before an
  // interactive pod was bound there: the replacement won the node back.
  int replacements_on_needed_nodes = 0;
  // A worker pod bound to a node onequeue had marked reserved/<pod> at the time (onequeue ways).
  int replacements_on_reserved_nodes = 0;
  // A pod bound to a node while another pod was still there (all ask every GPU of the node): two
  // schedulers booked the node twice. A kubelet would refuse one pod; kwok runs both.
  int overbooked_bindings = 0;
  int interactive_bound_onto_worker = 0;  // of those, an interactive pod bound where a worker still was
  int jobs_submitted = 0;
  int jobs_completed = 0;
  int jobs_requeued = 0;             // jobs with Restarts > 0
  int total_requeues = 0;            // sum of Restarts
  int max_requeues_of_one_job = 0;
  int requeued_jobs_completed = 0;   // of jobs_requeued, COMPLETED by the end of the settle time
  int requeued_jobs_back_on_reserved_node = 0;  // a requeued job seen running on a reserved node
  double slurm_gpu_hours = 0;        // COMPLETED jobs' run time x GPUs, by the end of the settle time
  // COMPLETED by the end of the window: the same time bound for every way.
  double slurm_gpu_hours_in_window = 0;
  std::vector<Sample> timeline;

  int Evictions() const { return worker_evictions + (HasWorkerPodsWay() ? 0 : total_requeues); }
  bool HasWorkerPodsWay() const { return way != "onequeue-lending"; }
  double BindPercentile(double p) const;  // seconds; -1 if none bound
  std::string Summary() const;            // one line for logs
  std::string SummaryJson() const;
};

// The clusters the scenario runs on, started by the caller (the e2e test's environments).
struct Clusters {
  const testing::K8sClusterInfo* k8s = nullptr;
  const testing::SlurmClusterInfo* slurm = nullptr;
  std::string scheduler_bin;  // onequeue-scheduler
  std::string work_dir;       // logs and configuration files of the run
};

// Runs the scenario one way, from an empty namespace to the end of the settle time, and leaves the
// clusters as it found them (namespace's pods, Slurm jobs and partition gone, nodes resumed).
// An error only when the set-up fails (the pool never filled, a scheduler did not start); what
// the schedulers did is in the result, never an error.
absl::StatusOr<ScenarioResult> RunScenario(Way way, const ScenarioOptions& options, const Clusters& clusters);

}  // namespace onequeue::e2e::stackhpc

#endif  // ONEQUEUE_TEST_E2E_STACKHPC_SCENARIO_H_
