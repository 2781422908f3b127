#pragma once
// What the admin calls of the QueueService (oq hold/release/drain/resume) do to the cluster. The
// daemon's implementation writes to the API server and slurmrestd; the loop sees the result in
// its next cycle like any other change (a held pod's onequeue.io/Held condition, a cordoned node).
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace onequeue::k8s {
class RestClient;
}
namespace onequeue::slurm {
class SlurmApi;
}

namespace onequeue::scheduler {

class AdminActions {
 public:
  virtual ~AdminActions() = default;
  // Sets the pod's onequeue.io/Held status condition: "True" with the reason (non-empty), or
  // "False" (empty). The pod's owner cannot write a pod's status, so cannot lift the hold.
  virtual absl::Status SetPodHold(const std::string& pod_key, const std::string& reason) = 0;
  // An admin hold (priority 0, the reason in the comment, without onequeue's tag), or its release.
  virtual absl::Status SetSlurmJobHold(uint32_t job, const std::string& reason, bool hold) = 0;
  // Cordons (drained) or uncordons the node; the reason goes to onequeue.io/drained.
  virtual absl::Status SetNodeDrained(const std::string& node, bool drained, const std::string& reason) = 0;
};

inline constexpr const char* kDrainedAnnotation = "onequeue.io/drained";

// Over the daemon's clients, which exist only after the server has started: until Connect*, the
// calls are kUnavailable.
class DaemonAdminActions final : public AdminActions {
 public:
  void ConnectKubernetes(k8s::RestClient* client) {
    absl::MutexLock l(&mu_);
    kube_ = client;
  }
  void ConnectSlurm(slurm::SlurmApi* api) {
    absl::MutexLock l(&mu_);
    slurm_ = api;
  }
  absl::Status SetPodHold(const std::string& pod_key, const std::string& reason) override;
  absl::Status SetSlurmJobHold(uint32_t job, const std::string& reason, bool hold) override;
  absl::Status SetNodeDrained(const std::string& node, bool drained, const std::string& reason) override;

 private:
  absl::Mutex mu_;
  k8s::RestClient* kube_ ABSL_GUARDED_BY(mu_) = nullptr;
  slurm::SlurmApi* slurm_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace onequeue::scheduler
