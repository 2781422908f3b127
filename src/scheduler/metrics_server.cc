#include "scheduler/metrics_server.h"

#include <sstream>
#include <vector>

#include "CivetServer.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace onequeue::scheduler {
namespace {

void Reply(mg_connection* conn, int code, const char* reason, const char* content_type, const std::string& body) {
  const std::string head = absl::StrCat("HTTP/1.1 ", code, " ", reason, "\r\nContent-Type: ", content_type,
                                        "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n");
  mg_write(conn, head.data(), head.size());
  mg_write(conn, body.data(), body.size());
}

class MetricsHandler : public CivetHandler {
 public:
  explicit MetricsHandler(std::shared_ptr<prometheus::Registry> registry) : registry_(std::move(registry)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_->Collect());
    Reply(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", out.str());
    return true;
  }

 private:
  const std::shared_ptr<prometheus::Registry> registry_;
};

class HealthHandler : public CivetHandler {
 public:
  explicit HealthHandler(const LoopHealth* health) : health_(health) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    if (health_ == nullptr) {
      Reply(conn, 200, "OK", "text/plain; charset=utf-8", "ok: no scheduling loop runs (kubernetes.enabled false)\n");
      return true;
    }
    const HealthVerdict v = health_->Check();
    if (v.serving) Reply(conn, 200, "OK", "text/plain; charset=utf-8", "ok: " + v.message + "\n");
    else Reply(conn, 503, "Service Unavailable", "text/plain; charset=utf-8", "not serving: " + v.message + "\n");
    return true;
  }

 private:
  const LoopHealth* const health_;
};

class CivetMetricsServer final : public MetricsServer {
 public:
  CivetMetricsServer(const std::string& address, std::shared_ptr<prometheus::Registry> registry,
                     const LoopHealth* health)
      : metrics_(std::move(registry)), health_(health),
        // Two threads: a scrape and a probe at once; nothing here is slow.
        server_(std::vector<std::string>{"listening_ports", address, "num_threads", "2"}) {
    server_.addHandler("/metrics", metrics_);
    server_.addHandler("/healthz", health_);
    const std::vector<int> ports = server_.getListeningPorts();
    port_ = ports.empty() ? 0 : ports.front();
  }
  ~CivetMetricsServer() override { server_.close(); }
  int port() const override { return port_; }

 private:
  MetricsHandler metrics_;
  HealthHandler health_;
  CivetServer server_;
  int port_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(const std::string& address,
                                                                  std::shared_ptr<prometheus::Registry> registry,
                                                                  const LoopHealth* health) {
  try {
    return std::make_unique<CivetMetricsServer>(address, std::move(registry), health);
  } catch (const CivetException& e) {  // cannot listen (the port is taken, a bad address)
    return absl::UnavailableError(absl::StrCat("cannot serve /metrics and /healthz on ", address, ": ", e.what()));
  }
}

}  // namespace onequeue::scheduler
