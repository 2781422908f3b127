#include "scheduler/grpc_service.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "onequeue/v1/queue.grpc.pb.h"
#include "onequeue/version.h"

namespace onequeue::scheduler {
namespace {

class QueueServiceImpl final : public onequeue::v1::QueueService::Service {
 public:
  explicit QueueServiceImpl(ServiceInfo info) : info_(std::move(info)) {}

  grpc::Status Health(grpc::ServerContext*, const v1::HealthRequest*, v1::HealthResponse* out) override {
    out->set_status(v1::HealthResponse::SERVING);
    return grpc::Status::OK;
  }
  grpc::Status Version(grpc::ServerContext*, const v1::VersionRequest*, v1::VersionResponse* out) override {
    out->set_version(kVersion);
    out->set_kubernetes_server_version(info_.kubernetes_server_version);
    out->set_slurm_api_version(info_.slurm_api_version);
    return grpc::Status::OK;
  }

 private:
  const ServiceInfo info_;
};

class GrpcQueueServer final : public QueueServer {
 public:
  GrpcQueueServer(std::unique_ptr<QueueServiceImpl> service, std::unique_ptr<grpc::Server> server, int port)
      : service_(std::move(service)), server_(std::move(server)), port_(port) {}
  ~GrpcQueueServer() override { Shutdown(); }
  int port() const override { return port_; }
  void Wait() override { server_->Wait(); }
  void Shutdown() override { server_->Shutdown(); }

 private:
  // Declared first so it is destroyed last: the server holds a raw pointer to the service.
  std::unique_ptr<QueueServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QueueServer>> StartQueueServer(const std::string& address, ServiceInfo info) {
  auto service = std::make_unique<QueueServiceImpl>(std::move(info));
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", address));
  }
  return std::make_unique<GrpcQueueServer>(std::move(service), std::move(server), port);
}

}  // namespace onequeue::scheduler
