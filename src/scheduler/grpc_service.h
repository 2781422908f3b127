#pragma once
// The daemon's gRPC QueueService. gRPC headers stay in the .cc: they are heavy to compile.
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "queue/model.h"
#include "scheduler/admin_actions.h"
#include "scheduler/cycle_status.h"
#include "scheduler/loop_health.h"

namespace onequeue::scheduler {

struct ServiceInfo {
  std::string kubernetes_server_version;
  std::string slurm_api_version;
  // The last cycle's status (read calls answer from it); null: the read calls are UNAVAILABLE.
  const StatusBoard* status = nullptr;
  // The priority weights, for `oq priority`.
  queue::PriorityWeights weights;
  // Admin calls (hold, release, drain, resume): what they do, and the file with the bearer token
  // they must present. Either empty: they are refused.
  AdminActions* admin = nullptr;
  std::string admin_token_file;
  // The scheduling loop's liveness, for Health; null: SERVING (no loop runs).
  const LoopHealth* health = nullptr;
  // TLS (server.tlsCertFile / tlsKeyFile, PEM): both set, the service speaks only TLS; both
  // empty, plaintext.
  std::string tls_cert_file, tls_key_file;
};

// A running QueueService; stops (and waits for in-flight calls) when destroyed.
class QueueServer {
 public:
  virtual ~QueueServer() = default;
  virtual int port() const = 0;
  virtual void Wait() = 0;
  virtual void Shutdown() = 0;
};

// Starts the QueueService on `address` (host:port; port 0 picks a free one). An unreadable
// certificate or key is FailedPrecondition naming the file.
absl::StatusOr<std::unique_ptr<QueueServer>> StartQueueServer(const std::string& address, ServiceInfo info);

}  // namespace onequeue::scheduler
