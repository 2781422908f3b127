#include "scheduler/oq_status.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "onequeue/v1/queue.grpc.pb.h"

namespace onequeue::cli {
namespace {

namespace v1 = onequeue::v1;

constexpr const char* kStatusUsage = R"(  queue [--start] [-u USER] [-n NAMESPACE] [--world kubernetes|slurm] [--format json]
                     pending and running pods and Slurm jobs, in queue order (like squeue);
                     --start: pending only, with their estimated start
  nodes [--format json]
                     pool nodes: owner, CPUs and memory used/total, what runs there, lending
  priority [-u USER] [-n NAMESPACE] [--format json]
                     each priority factor (weighted) and the total of every pending workload
                     (like sprio), then each account's fair-share usage and factor (like sshare)
  explain NAMESPACE/POD | NAMESPACE/group/NAME | slurm/JOBID [--format json]
                     why it is not running: per node, its reservation, the workloads ahead
  hold WORKLOAD [--reason TEXT] | release WORKLOAD
                     (admin) keep a workload waiting (reason Held) / let it go again
  drain NODE [--reason TEXT] | resume NODE
                     (admin) nothing new starts on the node (cordon) / open it again
                     admin calls send the bearer token of --token-file FILE (or $ONEQUEUE_TOKEN_FILE)
)";

// A table with columns as wide as their widest cell, two spaces apart (squeue's look).
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print() const {
    std::vector<size_t> width;
    for (const auto& r : rows_) {
      width.resize(std::max(width.size(), r.size()));
      for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    }
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
      }
      std::printf("%s\n", line.c_str());
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string Time(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "N/A";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%S", absl::FromUnixSeconds(unix_seconds), absl::UTCTimeZone());
}

std::string Duration(int64_t seconds) {
  if (seconds <= 0) return "-";
  const int64_t d = seconds / 86400, h = seconds % 86400 / 3600, m = seconds % 3600 / 60, s = seconds % 60;
  char buf[64];
  if (d > 0) std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", (long long)d, (long long)h, (long long)m, (long long)s);
  else std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)h, (long long)m, (long long)s);
  return buf;
}

// Run time so far (squeue's TIME): 0:00:00 for a job that started in the cycle shown.
std::string Elapsed(int64_t seconds) { return seconds <= 0 ? "0:00:00" : Duration(seconds); }

std::string Or(const std::string& v, const char* dash = "-") { return v.empty() ? dash : v; }

std::string Fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string Bytes(int64_t v) {
  if (v >= (1LL << 30) && v % (1LL << 30) == 0) return absl::StrCat(v >> 30, "Gi");
  if (v >= (1LL << 30)) return absl::StrCat(absl::StrFormat("%.1f", v / double(1LL << 30)), "Gi");
  if (v >= (1LL << 20)) return absl::StrCat(v >> 20, "Mi");
  return absl::StrCat(v);
}

std::string Cpus(int64_t millis) {
  return millis % 1000 == 0 ? absl::StrCat(millis / 1000) : absl::StrCat(millis, "m");
}

void PrintJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  std::printf("%s", out.c_str());
  if (out.empty() || out.back() != '\n') std::printf("\n");
}

int Failed(const std::string& server, const grpc::Status& s) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    std::fprintf(stderr, "oq: onequeue-scheduler at %s: %s\n", server.c_str(), s.error_message().c_str());
  } else {
    std::fprintf(stderr, "oq: %s\n", s.error_message().c_str());
  }
  return 1;
}

struct Flags {
  bool json = false;
  bool start = false;
  std::string user, ns, world, reason, token_file;
  std::vector<std::string> positional;
};

bool ParseFlags(const std::vector<std::string>& args, Flags* f) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "oq: %s needs a value\n", a.c_str());
        return false;
      }
      *out = args[++i];
      return true;
    };
    std::string format;
    if (a == "--format" || a == "-o") {
      if (!value(&format)) return false;
      if (format != "json" && format != "table") {
        std::fprintf(stderr, "oq: --format is table or json\n");
        return false;
      }
      f->json = format == "json";
    } else if (a == "--format=json" || a == "-ojson") {
      f->json = true;
    } else if (a == "--start") {
      f->start = true;
    } else if (a == "-u" || a == "--user") {
      if (!value(&f->user)) return false;
    } else if (a == "-n" || a == "--namespace") {
      if (!value(&f->ns)) return false;
    } else if (a == "--world") {
      if (!value(&f->world)) return false;
    } else if (a == "--reason") {
      if (!value(&f->reason)) return false;
    } else if (a == "--token-file") {
      if (!value(&f->token_file)) return false;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "oq: unknown option %s\n", a.c_str());
      return false;
    } else {
      f->positional.push_back(a);
    }
  }
  return true;
}

std::string Members(const v1::Workload& w) {
  if (w.world() == "slurm") return absl::StrCat(w.members(), "n");
  return absl::StrCat(w.members(), "p");
}

int Queue(v1::QueueService::Stub* stub, const std::string& server, const Flags& f) {
  v1::ListWorkloadsRequest req;
  req.set_namespace_(f.ns);
  req.set_user(f.user);
  req.set_world(f.world);
  req.set_pending_only(f.start);
  v1::ListWorkloadsResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = stub->ListWorkloads(&ctx, req, &resp);
  if (!s.ok()) return Failed(server, s);
  if (f.json) {
    PrintJson(resp);
    return 0;
  }
  if (f.start) {
    Table t({"WORLD", "ID", "ACCOUNT", "QOS", "POS", "START_TIME", "SIZE", "CPUS", "REASON"});
    for (const auto& w : resp.workloads()) {
      t.Add({w.world(), w.id(), Or(w.account()), Or(w.qos()), absl::StrCat(w.position()), Time(w.estimated_start()),
             Members(w), w.cpus(), Or(w.reason())});
    }
    t.Print();
    return 0;
  }
  Table t({"WORLD", "ID", "NAME", "ACCOUNT", "QOS", "STATE", "POS", "TIME", "TIME_LIMIT", "SIZE", "START",
           "NODELIST(REASON)"});
  for (const auto& w : resp.workloads()) {
    const bool running = w.state() == "RUNNING";
    std::string where = w.nodes().empty() ? absl::StrCat("(", w.reason(), ")")
                                          : absl::StrJoin(w.nodes().begin(), w.nodes().end(), ",");
    t.Add({w.world(), w.id(), Or(w.name()), Or(w.account()), Or(w.qos()), w.state(),
           w.position() > 0 ? absl::StrCat(w.position()) : "-",
           running ? Elapsed(resp.cycle().cycle_time() - w.start_time()) : "0:00:00",
           Duration(w.time_limit_seconds()), Members(w),
           running ? Time(w.start_time()) : Time(w.estimated_start()), where});
  }
  t.Print();
  return 0;
}

const v1::ResourceUse* Find(const v1::NodeInfo& n, const std::string& name) {
  for (const auto& r : n.resources()) {
    if (r.name() == name) return &r;
  }
  return nullptr;
}

int Nodes(v1::QueueService::Stub* stub, const std::string& server, const Flags& f) {
  v1::ListNodesResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = stub->ListNodes(&ctx, {}, &resp);
  if (!s.ok()) return Failed(server, s);
  if (f.json) {
    PrintJson(resp);
    return 0;
  }
  Table t({"NODE", "OWNER", "STATE", "CPUS(U/T)", "MEMORY(U/T)", "SLURM_NODE", "LENDING", "RUNNING"});
  for (const auto& n : resp.nodes()) {
    const v1::ResourceUse* cpu = Find(n, "cpu");
    const v1::ResourceUse* mem = Find(n, "memory");
    std::string owner = n.owner();
    if (!n.reserved_for().empty()) owner += "/" + n.reserved_for();
    t.Add({n.name(), owner, n.schedulable() ? "up" : "unschedulable",
           cpu ? absl::StrCat(Cpus(cpu->used()), "/", Cpus(cpu->allocatable())) : "-",
           mem ? absl::StrCat(Bytes(mem->used()), "/", Bytes(mem->allocatable())) : "-", Or(n.slurm_node()),
           n.lending(), n.workloads().empty() ? "-" : absl::StrJoin(n.workloads().begin(), n.workloads().end(), ",")});
  }
  t.Print();
  // Issue 25: each shared node's split between the worlds (also its onequeue.io/split annotation).
  bool header = false;
  for (const auto& n : resp.nodes()) {
    if (n.split().empty()) continue;
    if (!header) std::printf("\nShared nodes (pods | Slurm | free):\n");
    header = true;
    std::printf("  %s: %s\n", n.name().c_str(), n.split().c_str());
  }
  return 0;
}

int Priority(v1::QueueService::Stub* stub, const std::string& server, const Flags& f) {
  v1::ListPrioritiesRequest req;
  req.set_namespace_(f.ns);
  req.set_user(f.user);
  v1::ListPrioritiesResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = stub->ListPriorities(&ctx, req, &resp);
  if (!s.ok()) return Failed(server, s);
  if (f.json) {
    PrintJson(resp);
    return 0;
  }
  Table t({"WORLD", "ID", "ACCOUNT", "QOS_NAME", "POS", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS"});
  const auto& w = resp.weights();
  auto weight = [&](const char* k) { return w.count(k) ? Fixed(w.at(k)) : std::string("-"); };
  t.Add({"", "Weights", "", "", "", "", weight("age"), weight("fairShare"), weight("size"), weight("partition"),
         weight("qos")});
  for (const auto& p : resp.workloads()) {
    t.Add({p.world(), p.id(), Or(p.account()), Or(p.qos()), absl::StrCat(p.position()), PriorityTotalText(p.total()),
           Fixed(p.age()), Fixed(p.fair_share()), Fixed(p.job_size()), Fixed(p.partition()), Fixed(p.qos_factor())});
  }
  t.Print();
  // Issue 29: each account's usage (TRES billing-unit seconds, decayed) and factor, like sshare.
  if (resp.accounts_size() > 0) {
    std::printf("\n");
    Table a({"ACCOUNT", "USAGE", "USAGE_SHARE", "FAIRSHARE"});
    for (const auto& u : resp.accounts()) {
      a.Add({u.account(), absl::StrFormat("%.0f", u.usage()), absl::StrFormat("%.4f", u.usage_share()),
             absl::StrFormat("%.4f", u.fair_share())});
    }
    a.Print();
  }
  return 0;
}

int Explain(v1::QueueService::Stub* stub, const std::string& server, const Flags& f) {
  if (f.positional.size() != 1) {
    std::fprintf(stderr, "oq: explain needs one workload: NAMESPACE/POD, NAMESPACE/group/NAME or slurm/JOBID\n");
    return 2;
  }
  v1::ExplainRequest req;
  req.set_workload(f.positional[0]);
  v1::ExplainResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = stub->Explain(&ctx, req, &resp);
  if (!s.ok()) return Failed(server, s);
  if (f.json) {
    PrintJson(resp);
    return 0;
  }
  const v1::Workload& w = resp.workload();
  std::printf("%s (%s): %s\n", w.id().c_str(), w.world().c_str(), w.state().c_str());
  std::printf("  account %s, qos %s%s, %s of %s CPU, time limit %s, priority %s\n", Or(w.account()).c_str(),
              Or(w.qos()).c_str(), w.partition().empty() ? "" : (", partition " + w.partition()).c_str(),
              Members(w).c_str(), w.cpus().c_str(), Duration(w.time_limit_seconds()).c_str(),
              Fixed(w.priority()).c_str());
  if (w.state() == "RUNNING") {
    std::printf("  running since %s on %s\n", Time(w.start_time()).c_str(),
                absl::StrJoin(w.nodes().begin(), w.nodes().end(), ",").c_str());
    return 0;
  }
  if (w.state() == "STARTING") {
    std::printf("  being started on %s\n", absl::StrJoin(w.nodes().begin(), w.nodes().end(), ",").c_str());
    return 0;
  }
  std::printf("  position %d, reason %s: %s\n", w.position(), w.reason().c_str(), w.message().c_str());
  std::printf("  estimated start %s\n", Time(w.estimated_start()).c_str());
  if (!resp.reserved_nodes().empty()) {
    std::printf("  reservation: %s from %s\n",
                absl::StrJoin(resp.reserved_nodes().begin(), resp.reserved_nodes().end(), ",").c_str(),
                Time(resp.reserved_start()).c_str());
  } else {
    std::printf("  reservation: none\n");
  }
  if (!resp.preempting().empty()) {
    std::printf("  preempting: %s\n", absl::StrJoin(resp.preempting().begin(), resp.preempting().end(), ", ").c_str());
  }
  std::printf("Nodes:\n");
  Table nodes({"  NODE", "FITS", "WHY"});
  for (const auto& n : resp.nodes()) nodes.Add({"  " + n.node(), n.fits() ? "yes" : "no", n.why()});
  nodes.Print();
  std::printf("Ahead of it: %d\n", resp.ahead_total());
  if (!resp.ahead().empty()) {
    Table ahead({"  POS", "ID", "STATE", "REASON", "START"});
    for (const auto& a : resp.ahead()) {
      ahead.Add({"  " + absl::StrCat(a.position()), a.id(), a.state(), Or(a.reason()), Time(a.estimated_start())});
    }
    ahead.Print();
  }
  return 0;
}

bool ReadToken(const Flags& f, std::string* token) {
  std::string path = f.token_file;
  if (path.empty()) {
    const char* env = std::getenv("ONEQUEUE_TOKEN_FILE");
    if (env != nullptr) path = env;
  }
  if (path.empty()) {
    std::fprintf(stderr, "oq: admin calls need a token: --token-file FILE or $ONEQUEUE_TOKEN_FILE\n");
    return false;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  *token = std::string(absl::StripAsciiWhitespace(text.str()));
  if (!in || token->empty()) {
    std::fprintf(stderr, "oq: cannot read a token from %s\n", path.c_str());
    return false;
  }
  return true;
}

int Admin(v1::QueueService::Stub* stub, const std::string& server, const std::string& command, const Flags& f) {
  if (f.positional.size() != 1) {
    std::fprintf(stderr, "oq: %s needs one %s\n", command.c_str(),
                 command == "drain" || command == "resume" ? "node" : "workload");
    return 2;
  }
  std::string token;
  if (!ReadToken(f, &token)) return 2;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  ctx.AddMetadata("authorization", "Bearer " + token);
  v1::AdminResponse resp;
  grpc::Status s;
  const std::string& target = f.positional[0];
  if (command == "hold") {
    v1::HoldRequest req;
    req.set_workload(target);
    req.set_reason(f.reason);
    s = stub->Hold(&ctx, req, &resp);
  } else if (command == "release") {
    v1::ReleaseRequest req;
    req.set_workload(target);
    s = stub->Release(&ctx, req, &resp);
  } else if (command == "drain") {
    v1::DrainNodeRequest req;
    req.set_node(target);
    req.set_reason(f.reason);
    s = stub->DrainNode(&ctx, req, &resp);
  } else {
    v1::ResumeNodeRequest req;
    req.set_node(target);
    s = stub->ResumeNode(&ctx, req, &resp);
  }
  if (!s.ok()) return Failed(server, s);
  if (f.json) PrintJson(resp);
  else std::printf("%s\n", resp.message().c_str());
  return 0;
}

}  // namespace

bool IsStatusCommand(const std::string& command) {
  return command == "queue" || command == "nodes" || command == "priority" || command == "explain" ||
         command == "hold" || command == "release" || command == "drain" || command == "resume";
}

const char* StatusUsage() { return kStatusUsage; }

std::shared_ptr<grpc::Channel> OpenChannel(const std::string& server, const std::string& tls_ca) {
  if (tls_ca.empty()) return grpc::CreateChannel(server, grpc::InsecureChannelCredentials());
  std::ifstream in(tls_ca);
  std::stringstream pem;
  pem << in.rdbuf();
  if (!in || pem.str().find("-----BEGIN ") == std::string::npos) {
    std::fprintf(stderr, "oq: --tls-ca %s: cannot read a PEM certificate from it\n", tls_ca.c_str());
    return nullptr;
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pem.str();
  return grpc::CreateChannel(server, grpc::SslCredentials(options));
}

int RunStatusCommand(const std::string& server, const std::string& command, const std::vector<std::string>& args,
                     const std::string& tls_ca) {
  Flags f;
  if (!ParseFlags(args, &f)) return 2;
  const bool takes_argument = command != "queue" && command != "nodes" && command != "priority";
  if (!takes_argument && !f.positional.empty()) {
    std::fprintf(stderr, "oq: %s takes no argument \"%s\"\n", command.c_str(), f.positional[0].c_str());
    return 2;
  }
  std::shared_ptr<grpc::Channel> channel = OpenChannel(server, tls_ca);
  if (channel == nullptr) return 2;
  auto stub = v1::QueueService::NewStub(channel);
  if (command == "queue") return Queue(stub.get(), server, f);
  if (command == "nodes") return Nodes(stub.get(), server, f);
  if (command == "priority") return Priority(stub.get(), server, f);
  if (command != "explain") return Admin(stub.get(), server, command, f);
  return Explain(stub.get(), server, f);
}

}  // namespace onequeue::cli
