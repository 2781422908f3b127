#pragma once
// Fair-share usage in TRES billing units, like Slurm's TRESBillingWeights (issue 29): a running
// workload is billed, per second, the sum over its trackable resources of weight x amount
// (CPUs, memory, GRES such as GPUs). Pure: parsing and arithmetic, no I/O.
//
// The weights are written as Slurm writes them ("CPU=1.0,Mem=0.25G,GRES/gpu=2.0", names in any
// case) or as a YAML mapping of the same names ({cpu: 1.0, mem: 0.25G, gres/gpu: 4.0}):
//   cpu        per CPU (a pod's CPU request in cores; a Slurm job's allocated CPUs)
//   mem        per MB, or per unit of the suffix: 0.25G is 0.25 per GB (K, M, G, T; powers of 1024)
//   gres/NAME  per GRES of that name (Slurm's tres "gres/gpu"; a pod's Kubernetes resource is
//              the one slurm.gresResources maps NAME to, e.g. nvidia.com/gpu)
// Weights not given are 0, as in Slurm; without any weights a workload is billed its CPUs (CPU 1).
// Unlike Slurm, billing is always the sum (PriorityFlags=MAX_TRES is not read).
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "queue/resources.h"
#include "slurm_bridge/model.h"

namespace onequeue::scheduler {

struct TresBillingWeights {
  double cpu = 1;                      // per CPU
  double mem_per_mb = 0;               // per MB (1024 * 1024 bytes)
  std::map<std::string, double> gres;  // GRES name ("gpu", "gpu:a100") -> per unit
  friend bool operator==(const TresBillingWeights&, const TresBillingWeights&) = default;
};

// Reads "CPU=1.0,Mem=0.25G,GRES/gpu=2.0". Errors name the entry and say what is allowed.
absl::StatusOr<TresBillingWeights> ParseTresBillingWeights(const std::string& slurm_syntax);
// The same from name -> value ("1.0", "0.25G"): the YAML mapping form.
absl::StatusOr<TresBillingWeights> ParseTresBillingWeights(const std::map<std::string, std::string>& entries);
// "cpu=1,mem=0.25G,gres/gpu=4" (for logs and docs).
std::string FormatTresBillingWeights(const TresBillingWeights& w);

// Billing units per second of a pod workload that holds `used` (summed over its nodes);
// `gres_resources` maps a GRES name to its Kubernetes resource (slurm.gresResources).
double PodBillingRate(const queue::Resources& used, const queue::ResourceNames& names,
                      const TresBillingWeights& w, const std::map<std::string, std::string>& gres_resources);
// Billing units per second of a Slurm job: from what Slurm allocated it (tres_alloc_str: cpu,
// mem in MB, gres/NAME), or its CPUs when Slurm gives no TRES.
double JobBillingRate(const slurm::SlurmJob& job, const TresBillingWeights& w);

}  // namespace onequeue::scheduler
