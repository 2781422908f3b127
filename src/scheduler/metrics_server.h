#pragma once
// The daemon's HTTP endpoint on server.metricsAddress: /metrics (Prometheus text format of the
// registry) and /healthz (200 while the scheduling loop completes passes, 503 with the reason
// when it is stuck; the chart's liveness and readiness probes). One civetweb server for both, so
// the probes reach the port Prometheus scrapes.
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"
#include "scheduler/loop_health.h"

namespace onequeue::scheduler {

class MetricsServer {
 public:
  virtual ~MetricsServer() = default;
  virtual int port() const = 0;
};

// Listens on `address` (host:port; port 0 picks one). `health` null: /healthz always answers 200
// (no scheduling loop runs, e.g. kubernetes.enabled false). Both must outlive the server.
absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(const std::string& address,
                                                                  std::shared_ptr<prometheus::Registry> registry,
                                                                  const LoopHealth* health);

}  // namespace onequeue::scheduler
