#include "scheduler/admin_actions.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "k8s_client/rest_client.h"
#include "nlohmann/json.hpp"
#include "scheduler/snapshot_builder.h"
#include "slurm_bridge/slurm_api.h"

namespace onequeue::scheduler {

absl::Status DaemonAdminActions::SetPodHold(const std::string& pod_key, const std::string& reason) {
  absl::MutexLock l(&mu_);
  if (kube_ == nullptr) return absl::UnavailableError("not connected to Kubernetes");
  const size_t slash = pod_key.find('/');
  if (slash == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("not NAMESPACE/POD: ", pod_key));
  // In the pod's status (conditions merge by type), which its owner cannot write: a hold the
  // tenant cannot lift. Released: the condition stays, "False".
  const nlohmann::json condition = {
      {"type", kHeldCondition},
      {"status", reason.empty() ? "False" : "True"},
      {"reason", reason.empty() ? "ReleasedByAdministrator" : "HeldByAdministrator"},
      {"message", reason.empty() ? "released with oq release" : reason},
      {"lastTransitionTime", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone())}};
  auto p = kube_->Patch(k8s::ObjectPath(k8s::kPods, pod_key.substr(0, slash), pod_key.substr(slash + 1), "status"),
                        {{"status", {{"conditions", nlohmann::json::array({condition})}}}},
                        "application/strategic-merge-patch+json");
  return p.status();
}

absl::Status DaemonAdminActions::SetSlurmJobHold(uint32_t job, const std::string& reason, bool hold) {
  absl::MutexLock l(&mu_);
  if (slurm_ == nullptr) return absl::UnavailableError("Slurm is not configured");
  slurm::JobUpdate update;
  update.hold = hold;
  // Without onequeue's tag: the loop reads the hold as the administrator's and leaves the job alone.
  // In the AdminComment (issue 29): the job's own comment is its user's.
  if (hold) update.admin_comment = absl::StrCat("held by an administrator (oq hold): ", reason);
  return slurm_->UpdateJob(job, update);
}

absl::Status DaemonAdminActions::SetNodeDrained(const std::string& node, bool drained, const std::string& reason) {
  absl::MutexLock l(&mu_);
  if (kube_ == nullptr) return absl::UnavailableError("not connected to Kubernetes");
  nlohmann::json note = drained ? nlohmann::json(reason.empty() ? "drained with oq drain" : reason) : nlohmann::json(nullptr);
  auto p = kube_->Patch(k8s::ObjectPath(k8s::kNodes, "", node),
                        {{"spec", {{"unschedulable", drained}}}, {"metadata", {{"annotations", {{kDrainedAnnotation, note}}}}}},
                        "application/merge-patch+json");
  return p.status();
}

}  // namespace onequeue::scheduler
