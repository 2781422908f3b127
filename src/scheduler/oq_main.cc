// oq: onequeue's command line. Speaks onequeue.v1.QueueService to a running daemon and runs the
// queue offline (oq simulate).
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "onequeue/v1/queue.grpc.pb.h"
#include "onequeue/version.h"
#include "scheduler/oq_simulate.h"
#include "scheduler/oq_status.h"

namespace {

constexpr const char* kUsage = R"(Usage: oq [--server HOST:PORT] COMMAND [args]

Commands:
  version            print oq's version and, with --server, the daemon's
  health             ask the daemon whether it is serving
%s  simulate TRACE.swf --policy fcfs|easy|conservative
                     replay a Standard Workload Format trace through the queue offline

Options:
  --server HOST:PORT the daemon's gRPC address (default 127.0.0.1:50051, or $ONEQUEUE_SERVER)
  --tls-ca FILE      speak TLS, trusting the PEM certificate(s) in FILE (or $ONEQUEUE_TLS_CA):
                     for a daemon with server.tlsCertFile
  --version          print oq's version and exit
  --help             print this help and exit
)";

void PrintUsage(FILE* out) { std::fprintf(out, kUsage, onequeue::cli::StatusUsage()); }

std::unique_ptr<onequeue::v1::QueueService::Stub> Connect(const std::string& server, const std::string& tls_ca) {
  std::shared_ptr<grpc::Channel> channel = onequeue::cli::OpenChannel(server, tls_ca);
  if (channel == nullptr) std::exit(2);
  return onequeue::v1::QueueService::NewStub(channel);
}

grpc::ClientContext* WithDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return ctx;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const char* env_server = std::getenv("ONEQUEUE_SERVER");
  std::string server = env_server ? env_server : "127.0.0.1:50051";
  bool server_given = env_server != nullptr;
  const char* env_tls_ca = std::getenv("ONEQUEUE_TLS_CA");
  std::string tls_ca = env_tls_ca ? env_tls_ca : "";
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      PrintUsage(stdout);
      return 0;
    } else if (args[i] == "--version") {
      std::printf("oq %s\n", onequeue::kVersion);
      return 0;
    } else if (args[i] == "--server") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "oq: --server needs HOST:PORT\n");
        return 2;
      }
      server = args[++i];
      server_given = true;
    } else if (args[i] == "--tls-ca") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "oq: --tls-ca needs a PEM file\n");
        return 2;
      }
      tls_ca = args[++i];
    } else {
      rest.push_back(args[i]);
    }
  }
  if (rest.empty()) {
    std::fprintf(stderr, "oq: no command given\n\n");
    PrintUsage(stderr);
    return 2;
  }
  const std::string& cmd = rest[0];
  if (cmd == "simulate") return onequeue::cli::RunSimulate({rest.begin() + 1, rest.end()});
  if (onequeue::cli::IsStatusCommand(cmd)) return onequeue::cli::RunStatusCommand(server, cmd, {rest.begin() + 1, rest.end()}, tls_ca);
  if (cmd == "version") {
    std::printf("oq %s\n", onequeue::kVersion);
    if (!server_given) return 0;
    grpc::ClientContext ctx;
    onequeue::v1::VersionResponse resp;
    grpc::Status s = Connect(server, tls_ca)->Version(WithDeadline(&ctx), {}, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "oq: cannot reach onequeue-scheduler at %s: %s\n", server.c_str(),
                   s.error_message().c_str());
      return 1;
    }
    std::printf("onequeue-scheduler %s at %s\n", resp.version().c_str(), server.c_str());
    return 0;
  }
  if (cmd == "health") {
    grpc::ClientContext ctx;
    onequeue::v1::HealthResponse resp;
    grpc::Status s = Connect(server, tls_ca)->Health(WithDeadline(&ctx), {}, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "oq: cannot reach onequeue-scheduler at %s: %s\n", server.c_str(),
                   s.error_message().c_str());
      return 1;
    }
    std::printf("%s%s%s\n", onequeue::v1::HealthResponse::Status_Name(resp.status()).c_str(),
                resp.message().empty() ? "" : ": ", resp.message().c_str());
    return resp.status() == onequeue::v1::HealthResponse::SERVING ? 0 : 1;
  }
  std::fprintf(stderr, "oq: unknown command \"%s\"\n\n", cmd.c_str());
  PrintUsage(stderr);
  return 2;
}
