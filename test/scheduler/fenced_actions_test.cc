// Issue 13 defect 4: a deposed leader keeps writing. The write gate (FencedClusterActions,
// FencedSlurmActions) over a real LeaderElector, on a fake monotonic clock, against an in-memory
// Lease endpoint (optimistic concurrency as the apiserver does it): writes pass while the lease
// is fresh, are refused (nothing sent) once the renew deadline has passed since the start of the
// last renewal, and a process that was stopped refuses its first write after it resumes.
#include "scheduler/fenced_actions.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/scheduler_api.h"
#include "nlohmann/json.hpp"
#include "scheduler/leader_elector.h"

namespace onequeue::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Clock = std::chrono::steady_clock;

// A monotonic clock that moves only when told.
struct FakeClock {
  Clock::time_point now{std::chrono::hours(1000)};
  void Advance(absl::Duration d) { now += absl::ToChronoNanoseconds(d); }
  MonotonicClock Fn() {
    return [this] { return now; };
  }
};

// One Lease, served as the apiserver does: GET (404 when absent), POST (409 AlreadyExists), PUT
// with the resourceVersion read (409 Conflict otherwise). `before_answer` runs inside each request
// (a slow answer, a stopped process: the test moves clocks there).
class LeaseEndpoint : public k8s::HttpTransport {
 public:
  struct Seen {
    std::string method, path;
    absl::Duration timeout;
  };
  std::optional<nlohmann::json> lease;
  std::vector<Seen> seen;
  std::function<void(const k8s::HttpRequest&)> before_answer;
  int fail_next = 0;  // answer the next requests 503

  void SendAsync(k8s::HttpRequest r, ResponseCallback done) override {
    seen.push_back({r.method, r.path, r.timeout});
    if (before_answer) before_answer(r);
    done(Answer(r));
  }
  std::unique_ptr<k8s::HttpStream> OpenStream(k8s::HttpRequest, ChunkCallback, StreamDoneCallback done) override {
    done(absl::UnimplementedError("no streams"));
    return nullptr;
  }
  std::string Holder() const { return lease ? lease->value("spec", nlohmann::json::object()).value("holderIdentity", "") : ""; }

 private:
  static k8s::HttpResponse Status(int code, const std::string& reason) {
    return {code, nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                                 {"reason", reason}, {"code", code}, {"message", reason}}
                      .dump()};
  }
  k8s::HttpResponse Answer(const k8s::HttpRequest& r) {
    if (fail_next > 0) {
      --fail_next;
      return Status(503, "ServiceUnavailable");
    }
    if (r.method == "GET") return lease ? k8s::HttpResponse{200, lease->dump()} : Status(404, "NotFound");
    nlohmann::json body = nlohmann::json::parse(r.body);
    if (r.method == "POST") {
      if (lease) return Status(409, "AlreadyExists");
    } else if (r.method == "PUT") {
      if (!lease || (*lease)["metadata"].value("resourceVersion", "") != body["metadata"].value("resourceVersion", "")) {
        return Status(409, "Conflict");
      }
    } else {
      return Status(405, "MethodNotAllowed");
    }
    body["metadata"]["resourceVersion"] = std::to_string(++version_);
    lease = body;
    return {200, lease->dump()};
  }
  int version_ = 0;
};

// The writes that reached the cluster and Slurm.
class RecordingClusterActions : public ClusterActions {
 public:
  std::vector<std::string> calls;
  absl::Status Bind(const std::string& pod, const std::string& node, const std::string&) override {
    return Record("bind " + pod);
  }
  void StartBind(const std::string& pod, const std::string& node, const std::string&,
                 std::function<void(absl::Status)> done) override {
    done(Record("start-bind " + pod));
  }
  void BindSucceeded(const std::string& pod, const std::string&, const std::string&) override {
    Record("bind-succeeded " + pod).IgnoreError();
  }
  absl::Status ReportWaiting(const std::string& pod, const WaitReport&) override { return Record("report " + pod); }
  absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string& value,
                                           const std::string&) override {
    if (absl::Status s = Record("owner " + node); !s.ok()) return s;
    return std::string("2");
  }
  void NodeEvent(const std::string& node, const std::string& reason, const std::string&) override {
    Record("event " + node).IgnoreError();
  }
  absl::Status Nominate(const std::string& pod, const std::string&) override { return Record("nominate " + pod); }
  absl::Status Evict(const std::string& pod, const std::string&, const std::string&) override {
    return Record("evict " + pod);
  }

 private:
  absl::Status Record(std::string call) {
    calls.push_back(std::move(call));
    return absl::OkStatus();
  }
};

class RecordingSlurmActions : public SlurmActions {
 public:
  std::vector<std::string> calls;
  absl::Status Fence(const std::string& node, const std::string&) override { return Record("fence " + node); }
  absl::Status Unfence(const std::string& node) override { return Record("unfence " + node); }
  absl::Status Hold(uint32_t job, const std::string&) override { return Record(absl::StrCat("hold ", job)); }
  absl::Status StartOn(uint32_t job, const std::vector<std::string>&, const std::string&) override {
    return Record(absl::StrCat("start ", job));
  }
  absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array_job, uint32_t task, const std::string&) override {
    calls.push_back(absl::StrCat("split ", array_job, "_", task));
    return array_job + 1;
  }
  absl::Status StartArrayTask(uint32_t array_job, uint32_t task, const std::vector<std::string>&,
                              const std::string&) override {
    return Record(absl::StrCat("start ", array_job, "_", task));
  }
  absl::Status HoldArrayTasks(uint32_t array_job, const std::string& tasks, const std::string&) override {
    return Record(absl::StrCat("hold ", array_job, "_", tasks));
  }
  absl::Status Requeue(uint32_t job) override { return Record(absl::StrCat("requeue ", job)); }
  absl::Status RequeueArrayTask(uint32_t array_job, uint32_t task) override {
    return Record(absl::StrCat("requeue ", array_job, "_", task));
  }
  absl::Status Cancel(uint32_t job) override { return Record(absl::StrCat("cancel ", job)); }
  bool FenceRequeues() const override { return false; }
  absl::StatusOr<bool> Ready(const std::string&) override { return true; }

 private:
  absl::Status Record(std::string call) {
    calls.push_back(std::move(call));
    return absl::OkStatus();
  }
};

constexpr absl::Duration kLease = absl::Seconds(9);  // renew deadline 6 s

// One replica: its clock, its lease client (the daemon's settings) and elector.
struct Replica {
  Replica(LeaseEndpoint* endpoint, const std::string& identity) {
    k8s::ClientConfig config;
    config.server = "https://127.0.0.1:6443";
    k8s::ClientEnv env;
    env.sleep = [](absl::Duration) {};
    // The endpoint is shared between replicas: each replica's client gets a forwarding transport.
    struct Forward : k8s::HttpTransport {
      LeaseEndpoint* to;
      explicit Forward(LeaseEndpoint* t) : to(t) {}
      void SendAsync(k8s::HttpRequest r, ResponseCallback done) override { to->SendAsync(std::move(r), std::move(done)); }
      std::unique_ptr<k8s::HttpStream> OpenStream(k8s::HttpRequest r, ChunkCallback c, StreamDoneCallback d) override {
        return to->OpenStream(std::move(r), std::move(c), std::move(d));
      }
    };
    client = std::make_unique<k8s::RestClient>(LeaderElector::LeaseClientConfig(config, kLease),
                                               std::make_unique<Forward>(endpoint), LeaderElector::LeaseRetryPolicy(),
                                               env);
    api = std::make_unique<k8s::SchedulerApi>(client.get());
    LeaderElector::Options o;
    o.namespace_ = "onequeue-system";
    o.name = "onequeue";
    o.identity = identity;
    o.lease_duration = kLease;
    o.clock = clock.Fn();
    elector = std::make_unique<LeaderElector>(api.get(), std::move(o));
  }
  FakeClock clock;
  std::unique_ptr<k8s::RestClient> client;
  std::unique_ptr<k8s::SchedulerApi> api;
  std::unique_ptr<LeaderElector> elector;
};

class FencedActionsTest : public ::testing::Test {
 protected:
  FencedActionsTest()
      : leader_(&endpoint_, "leader"),
        cluster_(&cluster_writes_, leader_.elector.get(),
                 [this](const std::string& what, const absl::Status&) { refused_.push_back(what); }),
        slurm_(&slurm_writes_, leader_.elector.get()) {}

  // Every kind of write once; the statuses of those that return one.
  std::vector<absl::Status> WriteEverything() {
    std::vector<absl::Status> out;
    out.push_back(cluster_.Bind("ns/a", "n1", "m"));
    cluster_.StartBind("ns/b", "n1", "m", [&](absl::Status s) { out.push_back(s); });
    cluster_.BindSucceeded("ns/b", "n1", "m");
    out.push_back(cluster_.ReportWaiting("ns/c", WaitReport{}));
    out.push_back(cluster_.SetNodeOwner("n1", "reserved/ns/p", "1").status());
    cluster_.NodeEvent("n1", "Lent", "note");
    out.push_back(cluster_.Nominate("ns/p", "n1"));
    // Issue 26: the reservation's writes without waiting are gated as the others.
    cluster_.StartSetNodeOwner("n2", "reserved/ns/q", "1", [&](absl::StatusOr<std::string> s) { out.push_back(s.status()); });
    cluster_.StartNominate("ns/q", "n2", [&](absl::Status s) { out.push_back(s); });
    // Issue 26: a nomination carrying its waiting report (the recording fake's default: report,
    // then nomination: two writes when admitted).
    cluster_.StartNominateWithReport("ns/r", "n3", WaitReport{}, [&](absl::Status s) { out.push_back(s); });
    out.push_back(cluster_.Evict("ns/v", "ns/p", "m"));
    out.push_back(slurm_.Fence("n1", "kubernetes"));
    out.push_back(slurm_.Unfence("n1"));
    out.push_back(slurm_.Hold(7, "c"));
    out.push_back(slurm_.StartOn(7, {"n1"}, "c"));
    out.push_back(slurm_.Requeue(8));
    out.push_back(slurm_.Cancel(9));
    // Issue 29's array writes: gated and forwarded (before, the base class refused them all, so a
    // leader started no array task).
    out.push_back(slurm_.SplitArrayTask(10, 1, "c").status());
    out.push_back(slurm_.StartArrayTask(10, 1, {"n1"}, "c"));
    out.push_back(slurm_.HoldArrayTasks(10, "2-5", "c"));
    out.push_back(slurm_.RequeueArrayTask(10, 9));
    return out;
  }
  size_t Writes() const { return cluster_writes_.calls.size() + slurm_writes_.calls.size(); }

  LeaseEndpoint endpoint_;
  Replica leader_;
  RecordingClusterActions cluster_writes_;
  RecordingSlurmActions slurm_writes_;
  std::vector<std::string> refused_;
  FencedClusterActions cluster_;
  FencedSlurmActions slurm_;
};

void ExpectAllRefused(const std::vector<absl::Status>& statuses) {
  for (const absl::Status& s : statuses) {
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  }
}

TEST_F(FencedActionsTest, NoWriteBeforeTheLeaseIsHeld) {
  ExpectAllRefused(WriteEverything());
  EXPECT_EQ(Writes(), 0u);
  EXPECT_EQ(refused_.size(), 11u);  // each ClusterActions write said why
}

TEST_F(FencedActionsTest, WritesPassWhileTheLeaseIsFresh) {
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  EXPECT_EQ(endpoint_.Holder(), "leader");
  leader_.clock.Advance(absl::Seconds(6) - absl::Milliseconds(1));
  for (const absl::Status& s : WriteEverything()) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(cluster_writes_.calls.size(), 12u);
  EXPECT_EQ(slurm_writes_.calls.size(), 10u);
  EXPECT_THAT(refused_, IsEmpty());
}

TEST_F(FencedActionsTest, WritesAreRefusedOnceTheRenewDeadlinePassesWithoutARenewal) {
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  EXPECT_EQ(leader_.elector->renew_deadline(), absl::Seconds(6));
  // The apiserver stops answering: renewals fail, the deadline passes.
  endpoint_.fail_next = 1000;
  leader_.clock.Advance(absl::Seconds(3));
  EXPECT_FALSE(leader_.elector->TryAcquireOrRenew());
  EXPECT_TRUE(leader_.elector->Leading());
  leader_.clock.Advance(absl::Seconds(3));
  EXPECT_FALSE(leader_.elector->TryAcquireOrRenew());
  EXPECT_FALSE(leader_.elector->Leading());
  ExpectAllRefused(WriteEverything());
  EXPECT_EQ(Writes(), 0u);
  ASSERT_FALSE(refused_.empty());
  EXPECT_THAT(refused_[0], HasSubstr("bind ns/a to n1"));
  EXPECT_THAT(std::string(cluster_.Bind("ns/a", "n1", "m").message()), HasSubstr("lease not renewed for 6s"));
}

TEST_F(FencedActionsTest, ARenewalMovesTheDeadlineFromTheStartOfTheRenewal) {
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  leader_.clock.Advance(absl::Seconds(4));
  // The renewal itself is slow: 2 s between asking and the answer. The deadline counts from
  // when it was asked: 4 s + 6 s = 10 s.
  endpoint_.before_answer = [&](const k8s::HttpRequest& r) {
    if (r.method == "GET") leader_.clock.Advance(absl::Seconds(2));
  };
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  endpoint_.before_answer = nullptr;
  leader_.clock.Advance(absl::Seconds(4) - absl::Milliseconds(1));  // 9.999 s
  EXPECT_TRUE(cluster_.Bind("ns/a", "n1", "m").ok());
  leader_.clock.Advance(absl::Milliseconds(1));  // 10 s
  EXPECT_TRUE(absl::IsFailedPrecondition(cluster_.Bind("ns/a", "n1", "m")));
  EXPECT_THAT(cluster_writes_.calls, ElementsAre("bind ns/a"));
}

// Issue 24 M1: how long a write may still take is the time left before the renew deadline of the
// last renewal (what the slurmrestd client bounds each write by); none before the lease is held.
TEST_F(FencedActionsTest, TheTimeLeftForAWriteEndsAtTheRenewDeadline) {
  EXPECT_EQ(leader_.elector->WriteTimeLeft(), absl::ZeroDuration());
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  EXPECT_EQ(leader_.elector->WriteTimeLeft(), absl::Seconds(6));
  leader_.clock.Advance(absl::Seconds(4));
  EXPECT_EQ(leader_.elector->WriteTimeLeft(), absl::Seconds(2));
  leader_.clock.Advance(absl::Seconds(2));
  EXPECT_EQ(leader_.elector->WriteTimeLeft(), absl::ZeroDuration());
  leader_.clock.Advance(absl::Seconds(5));
  EXPECT_EQ(leader_.elector->WriteTimeLeft(), absl::ZeroDuration());
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  EXPECT_EQ(leader_.elector->WriteTimeLeft(), absl::Seconds(6));
  leader_.elector->StopWriting();
  EXPECT_EQ(leader_.elector->WriteTimeLeft(), absl::ZeroDuration());
}

// A Slurm write admitted in time whose client gave up at the lease's end (kDeadlineExceeded) is
// reported with the refused writes; one that times out while the lease is still valid is not.
TEST_F(FencedActionsTest, ASlurmWriteAbandonedAtTheLeasesEndIsReported) {
  struct Hanging : RecordingSlurmActions {
    std::function<void()> during;
    absl::Status Hold(uint32_t job, const std::string& c) override {
      if (during) during();
      return absl::DeadlineExceededError("slurmrestd: timed out");
    }
  } hanging;
  std::vector<std::string> reported;
  FencedSlurmActions slurm(&hanging, leader_.elector.get(),
                           [&](const std::string& what, const absl::Status& why) { reported.push_back(std::string(why.message())); });
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  EXPECT_TRUE(absl::IsDeadlineExceeded(slurm.Hold(7, "c")));
  EXPECT_THAT(reported, IsEmpty());
  hanging.during = [&] { leader_.clock.Advance(absl::Seconds(6)); };  // the write takes the rest of the lease
  EXPECT_TRUE(absl::IsDeadlineExceeded(slurm.Hold(7, "c")));
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_THAT(reported[0], HasSubstr("Slurm hold of job 7 abandoned at the lease's end"));
}

// The process is stopped (SIGSTOP, a long GC-like pause, a frozen VM) for longer than the lease;
// meanwhile a standby takes the Lease. On resuming, the cycle that was running goes on to its
// next write: refused, before any request, whatever the lease thread has or has not noticed.
TEST_F(FencedActionsTest, AProcessThatWasStoppedRefusesItsFirstWriteAfterResuming) {
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  EXPECT_TRUE(cluster_.Evict("ns/v1", "ns/p", "m").ok());

  Replica standby(&endpoint_, "standby");
  EXPECT_FALSE(standby.elector->TryAcquireOrRenew());  // sees the leader's record
  standby.clock.Advance(kLease - absl::Milliseconds(1));
  EXPECT_FALSE(standby.elector->TryAcquireOrRenew());  // not a whole lease yet on its clock
  standby.clock.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(standby.elector->TryAcquireOrRenew());
  EXPECT_EQ(endpoint_.Holder(), "standby");
  // The stopped leader's monotonic clock ran on while it was stopped.
  leader_.clock.Advance(kLease + absl::Seconds(1));

  EXPECT_TRUE(absl::IsFailedPrecondition(cluster_.Evict("ns/v2", "ns/p", "m")));
  EXPECT_TRUE(absl::IsFailedPrecondition(cluster_.SetNodeOwner("n1", "", "5").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(slurm_.Requeue(8)));
  EXPECT_THAT(cluster_writes_.calls, ElementsAre("evict ns/v1"));
  EXPECT_THAT(slurm_writes_.calls, IsEmpty());
  // And its lease thread finds the Lease taken: not leading, writes stay refused.
  EXPECT_FALSE(leader_.elector->TryAcquireOrRenew());
  EXPECT_FALSE(leader_.elector->Leading());
  EXPECT_EQ(endpoint_.Holder(), "standby");
}

// Stopped in the middle of a renewal, between its read and its write: the write would rest on a
// read older than the renew deadline. It is not sent (the audit log of the fault e2e shows no
// request at all from a stopped leader after the takeover), and the gate stays shut.
TEST_F(FencedActionsTest, AnAttemptStoppedBetweenItsReadAndItsWriteSendsNoWrite) {
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  endpoint_.before_answer = [&](const k8s::HttpRequest& r) {
    if (r.method == "GET") leader_.clock.Advance(absl::Seconds(20));
  };
  endpoint_.seen.clear();
  EXPECT_FALSE(leader_.elector->TryAcquireOrRenew());
  ASSERT_EQ(endpoint_.seen.size(), 1u);
  EXPECT_EQ(endpoint_.seen[0].method, "GET");
  endpoint_.before_answer = nullptr;
  EXPECT_FALSE(leader_.elector->Leading());
  EXPECT_TRUE(absl::IsFailedPrecondition(cluster_.Nominate("ns/p", "n1")));
  EXPECT_THAT(cluster_writes_.calls, IsEmpty());
  // The next attempt, not stopped, renews from a fresh read.
  EXPECT_TRUE(leader_.elector->TryAcquireOrRenew());
  EXPECT_TRUE(cluster_.Nominate("ns/p", "n1").ok());
}

// A renewal whose answer is slow but lands inside the deadline still counts from its start.
TEST_F(FencedActionsTest, ASlowRenewalThatSucceedsOpensTheGateOnlyUntilItsStartPlusTheDeadline) {
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  leader_.clock.Advance(absl::Seconds(5));
  endpoint_.before_answer = [&](const k8s::HttpRequest& r) {
    if (r.method == "PUT") leader_.clock.Advance(absl::Seconds(5));  // lands at 10 s, asked at 5 s
  };
  EXPECT_TRUE(leader_.elector->TryAcquireOrRenew());
  endpoint_.before_answer = nullptr;
  EXPECT_TRUE(leader_.elector->Leading());  // 10 s < 5 s + 6 s
  leader_.clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(leader_.elector->Leading());
}

TEST_F(FencedActionsTest, ReleaseStopsWritesAndClearsTheHolder) {
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  leader_.elector->Release();
  EXPECT_EQ(endpoint_.Holder(), "");
  ExpectAllRefused(WriteEverything());
  EXPECT_EQ(Writes(), 0u);
  // Given up for good: a later attempt takes nothing.
  EXPECT_FALSE(leader_.elector->TryAcquireOrRenew());
  EXPECT_EQ(endpoint_.Holder(), "");
}

// Each lease request ends well inside the renew deadline: a short timeout of its own and no retry
// (the next attempt, a retry period later, is the retry).
TEST_F(FencedActionsTest, LeaseRequestsHaveShortTimeoutsAndAreNotRetried) {
  EXPECT_EQ(LeaderElector::RequestTimeout(absl::Seconds(15)), absl::Milliseconds(2500));
  EXPECT_EQ(LeaderElector::RequestTimeout(absl::Seconds(9)), absl::Milliseconds(1500));
  // The shortest lease the configuration allows (2 s): a GET and a PUT still fit in the deadline.
  EXPECT_GE(LeaderElector::RequestTimeout(absl::Seconds(2)), absl::Milliseconds(250));
  EXPECT_LT(LeaderElector::RequestTimeout(absl::Seconds(2)) * 2, LeaderElector::RenewDeadline(absl::Seconds(2)));
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  ASSERT_EQ(endpoint_.seen.size(), 4u);  // GET 404, POST, GET, PUT
  EXPECT_EQ(endpoint_.seen[1].method, "POST");
  EXPECT_EQ(endpoint_.seen[3].method, "PUT");
  for (const auto& s : endpoint_.seen) EXPECT_EQ(s.timeout, absl::Milliseconds(1500)) << s.method;
  endpoint_.seen.clear();
  endpoint_.fail_next = 1;
  EXPECT_FALSE(leader_.elector->TryAcquireOrRenew());
  EXPECT_EQ(endpoint_.seen.size(), 1u);  // the failed GET, not tried again
  k8s::ClientConfig slow;
  slow.connect_timeout = absl::Seconds(10);
  EXPECT_EQ(LeaderElector::LeaseClientConfig(slow, absl::Seconds(9)).connect_timeout, absl::Milliseconds(1500));
}


// The same gate inside the client the loop writes with (main.cc): each write asks it before each
// attempt and again at the last moment on the transport thread (HttpRequest::admit), so a write
// that waited (rate limiter, backoff, a pause) while the lease ran out is never sent. Reads pass.
TEST_F(FencedActionsTest, TheLoopsClientAsksTheGateBeforeSendingAnyWrite) {
  struct Recording : k8s::HttpTransport {
    std::vector<std::string> sent;
    bool carried_admit = false;
    void SendAsync(k8s::HttpRequest r, ResponseCallback done) override {
      carried_admit = carried_admit || static_cast<bool>(r.admit);
      sent.push_back(r.method + " " + r.path);
      done(k8s::HttpResponse{200, "{}"});
    }
    std::unique_ptr<k8s::HttpStream> OpenStream(k8s::HttpRequest, ChunkCallback, StreamDoneCallback done) override {
      done(absl::UnimplementedError("no streams"));
      return nullptr;
    }
  };
  auto transport = std::make_unique<Recording>();
  Recording* wire = transport.get();
  k8s::ClientConfig config;
  config.server = "https://127.0.0.1:6443";
  k8s::ClientEnv env;
  env.sleep = [](absl::Duration) {};
  k8s::RestClient writer(config, std::move(transport), k8s::RetryPolicy{}, env);
  writer.SetWriteGate([this] { return leader_.elector->MayWrite(); });

  const std::string pod = k8s::ObjectPath(k8s::kPods, "ns", "p");
  EXPECT_TRUE(absl::IsFailedPrecondition(writer.Patch(pod, {{"metadata", nullptr}}, "application/merge-patch+json").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(writer.Post(pod + "/eviction", nlohmann::json::object()).status()));
  EXPECT_TRUE(writer.Get(pod).ok());  // reads are not gated
  EXPECT_THAT(wire->sent, ElementsAre("GET " + pod));

  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  EXPECT_TRUE(writer.Patch(pod, {{"metadata", nullptr}}, "application/merge-patch+json").ok());
  EXPECT_TRUE(wire->carried_admit);  // the transport asks again just before the wire
  leader_.clock.Advance(absl::Seconds(6));
  EXPECT_TRUE(absl::IsFailedPrecondition(writer.Delete(pod).status()));
  EXPECT_EQ(wire->sent.size(), 2u);  // the GET and the PATCH
}


// The last-moment check in the real transport (libcurl, on its thread): an asynchronous binding
// handed over while the gate is shut ends FailedPrecondition without a connection being tried;
// with the gate open the same call does try (nothing listens on port 1: Unavailable).
TEST_F(FencedActionsTest, TheTransportAsksTheGateOnItsThreadJustBeforeTheWire) {
  k8s::ClientConfig config;
  config.server = "http://127.0.0.1:1";
  auto transport = k8s::NewCurlTransport(config);
  ASSERT_TRUE(transport.ok()) << transport.status();
  k8s::RestClient writer(config, *std::move(transport), k8s::RetryPolicy{.max_attempts = 1});
  writer.SetWriteGate([this] { return leader_.elector->MayWrite(); });
  auto bind = [&] {
    absl::Notification done;
    absl::Status result;
    k8s::HttpRequest r;
    r.method = "POST";
    r.path = k8s::ObjectPath(k8s::kPods, "ns", "p", "binding");
    r.body = "{}";
    writer.DoAsync(r, [&](absl::StatusOr<std::string> s) {
      result = s.status();
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  };
  const absl::Status shut = bind();
  EXPECT_TRUE(absl::IsFailedPrecondition(shut)) << shut;
  EXPECT_THAT(std::string(shut.message()), HasSubstr("not the leader"));
  ASSERT_TRUE(leader_.elector->TryAcquireOrRenew());
  const absl::Status open = bind();
  EXPECT_TRUE(absl::IsUnavailable(open)) << open;
}

// A deposed leader's cycle refuses every write of a big backlog: the log shows the first refusal
// in full, then at most one line a second with how many more there were.
TEST(RefusedWriteLogTest, TheFirstRefusalInFullThenAtMostOneSummaryLineASecond) {
  FakeClock clock;
  std::vector<std::string> lines;
  RefusedWriteLog log(clock.Fn(), [&](const std::string& line) { lines.push_back(line); });
  auto refuse = [&](int i) {
    const std::string what = absl::StrCat("bind ns/p", i, " to n1");
    log.Refused(what, absl::FailedPreconditionError(absl::StrCat(what, " refused: not the leader")));
  };
  for (int i = 0; i < 1000; ++i) {  // 1,000 refusals in 0.5 s
    refuse(i);
    clock.Advance(absl::Microseconds(500));
  }
  EXPECT_THAT(lines, ElementsAre("bind ns/p0 to n1 refused: not the leader"));
  clock.Advance(absl::Milliseconds(600));  // 1.1 s after the first line
  refuse(1000);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "1000 more writes refused (latest: bind ns/p1000 to n1 refused: not the leader)");
  // Ten seconds of a refusal every 10 ms: one line a second, no more.
  for (int i = 0; i < 1000; ++i) {
    clock.Advance(absl::Milliseconds(10));
    refuse(2000 + i);
  }
  EXPECT_EQ(lines.size(), 12u);
  EXPECT_THAT(lines.back(), HasSubstr("100 more writes refused"));
  // After a quiet second the next refusal is logged in full again.
  clock.Advance(absl::Seconds(2));
  lines.clear();
  refuse(5000);
  clock.Advance(absl::Seconds(2));
  refuse(5001);
  EXPECT_THAT(lines, ElementsAre("bind ns/p5000 to n1 refused: not the leader",
                                 "bind ns/p5001 to n1 refused: not the leader"));
}

// Wired to the gate: what the gate refuses reaches the log.
TEST(RefusedWriteLogTest, TheGatesRefusalsGoThroughTheLog) {
  FakeClock clock;
  std::vector<std::string> lines;
  RefusedWriteLog log(clock.Fn(), [&](const std::string& line) { lines.push_back(line); });
  struct Deposed : WritePermit {
    absl::Status MayWrite() const override { return absl::UnavailableError("not the leader"); }
  } permit;
  RecordingClusterActions inner;
  FencedClusterActions fenced(&inner, &permit, RefusedWriteLog::To(&log));
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(fenced.Nominate(absl::StrCat("ns/p", i), "n1").ok());
  EXPECT_THAT(inner.calls, IsEmpty());
  EXPECT_THAT(lines, ElementsAre(HasSubstr("nomination of ns/p0 to 'n1' refused")));
}

}  // namespace
}  // namespace onequeue::scheduler
