// onequeue-scheduler: the daemon. Today it validates its configuration and serves the gRPC
// QueueService; the informers, the Slurm poller and the queue cycle are wired in as they land.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "onequeue/version.h"
#include "scheduler/config.h"
#include "scheduler/grpc_service.h"
#include "spdlog/spdlog.h"

namespace {

constexpr const char* kUsage = R"(Usage: onequeue-scheduler --config FILE [options]

One Slurm-style priority/backfill queue for Kubernetes pods (schedulerName: onequeue) and Slurm
jobs on one shared pool of nodes.

Options:
  --config FILE     the SchedulerConfiguration (YAML, apiVersion onequeue.io/v1alpha1); required
  --check-config    validate the configuration, print a summary and exit (0 if valid)
  --grpc-address A  override server.grpcAddress (host:port, 127.0.0.1 by default)
  --version         print the version and exit
  --help            print this help and exit

Exit codes: 0 success, 1 runtime failure, 2 usage error, 3 invalid or unreadable configuration.
)";

int Usage(const char* why) {
  std::fprintf(stderr, "onequeue-scheduler: %s\n\n%s", why, kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, grpc_address;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("onequeue-scheduler %s\n", onequeue::kVersion);
      return 0;
    } else if (a == "--check-config") {
      check_only = true;
    } else if (a == "--config" || a == "--grpc-address") {
      const char* v = value(a.c_str());
      if (!v) return Usage((a + " needs a value").c_str());
      (a == "--config" ? config_path : grpc_address) = v;
    } else if (a.rfind("--config=", 0) == 0) {
      config_path = a.substr(9);
    } else {
      return Usage(("unknown argument: " + a).c_str());
    }
  }
  if (config_path.empty()) return Usage("--config FILE is required");

  auto config = onequeue::scheduler::LoadConfigFile(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "onequeue-scheduler: %s\n", std::string(config.status().message()).c_str());
    return 3;
  }
  if (!grpc_address.empty()) config->server.grpc_address = grpc_address;
  if (check_only) {
    std::printf("%s: valid (schedulerName %s, slurm %s, reservationDepth %d)\n", config_path.c_str(),
                config->scheduler_name.c_str(), config->slurm.enabled ? "enabled" : "disabled",
                config->queue.reservation_depth);
    return 0;
  }

  auto server = onequeue::scheduler::StartQueueServer(config->server.grpc_address, {});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  spdlog::info("onequeue-scheduler {} serving onequeue.v1.QueueService on port {}", onequeue::kVersion,
               (*server)->port());

  // Stop cleanly on SIGTERM/SIGINT: block them here and wait for one in this thread.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("signal {}: shutting down", sig);
  (*server)->Shutdown();
  return 0;
}
