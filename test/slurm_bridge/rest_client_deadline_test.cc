// Issue 24 M1 at the slurmrestd client: every write is bounded by the writer's lease
// (RestClient::BoundWrites). A write whose time runs out is abandoned with kDeadlineExceeded and
// never sent after it; reads are not bounded; each step of a multi-request write asks again.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scripted_transport.h"
#include "slurm_bridge/rest_client.h"
#include "slurm_bridge/slurm_api.h"

namespace onequeue::slurm {
namespace {

using ::testing::HasSubstr;
using testing::ScriptedTransport;

// A slurmrestd that hangs: listens on 127.0.0.1 (an ephemeral port), accepts every connection,
// reads what comes and never answers. Remembers when each request's first bytes arrived. Stops
// its own thread and closes its own sockets.
class HungServer {
 public:
  HungServer() {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener_, 8) != 0) return;
    socklen_t len = sizeof addr;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~HungServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int fd : clients_) close(fd);
    close(listener_);
  }
  int port() const { return port_; }
  std::vector<absl::Time> arrivals() {
    absl::MutexLock lock(&mu_);
    return arrivals_;
  }

 private:
  void Serve() {
    while (!stop_) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (int fd : clients_) fds.push_back({fd, POLLIN, 0});
      if (poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) clients_.push_back(fd);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[4096];
        const ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {  // the client gave up: its connection is closed here too
          close(fds[i].fd);
          std::erase(clients_, fds[i].fd);
          continue;
        }
        const std::string_view got(buf, static_cast<size_t>(n));
        // A request line starts a request (the rest of its headers and body may follow).
        if (got.rfind("POST ", 0) == 0 || got.rfind("GET ", 0) == 0) {
          absl::MutexLock lock(&mu_);
          arrivals_.push_back(absl::Now());
        }
      }
    }
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<int> clients_;  // the server thread's only
  absl::Mutex mu_;
  std::vector<absl::Time> arrivals_ ABSL_GUARDED_BY(mu_);
};

TEST(RestClientDeadlineTest, AWriteToAHungSlurmrestdEndsAtItsDeadlineAndIsNeverSentAfterIt) {
  HungServer server;
  ASSERT_NE(server.port(), 0);
  CurlTransportOptions o;
  o.base_url = absl::StrCat("http://127.0.0.1:", server.port());
  o.request_timeout = absl::Seconds(60);
  auto transport = NewSlurmTransport(o);
  ASSERT_TRUE(transport.ok()) << transport.status();
  RestClient client(*std::move(transport), MakeStaticCredentials({"slurm", "tok"}));
  const absl::Time deadline = absl::Now() + absl::Milliseconds(300);  // the writer's lease ends
  client.BoundWrites([deadline] { return deadline - absl::Now(); }, o.request_timeout);

  const nlohmann::json body = {{"hold", true}};
  absl::StatusOr<RestResponse> held = client.Call("POST", "/slurm/v0.0.38/job/7", &body);
  EXPECT_TRUE(absl::IsDeadlineExceeded(held.status())) << held.status();
  // After the deadline nothing more is sent: not a retry, not the next write. (The transport's
  // timeout has millisecond steps: the first write may give up a fraction of one early.)
  absl::SleepFor(std::max(absl::ZeroDuration(), deadline - absl::Now()));
  absl::StatusOr<RestResponse> next = client.Call("POST", "/slurm/v0.0.38/job/8", &body);
  EXPECT_TRUE(absl::IsDeadlineExceeded(next.status())) << next.status();
  EXPECT_THAT(std::string(next.status().message()), HasSubstr("abandoned"));
  const std::vector<absl::Time> arrivals = server.arrivals();
  ASSERT_EQ(arrivals.size(), 1u) << "the first write once, nothing after the deadline";
  EXPECT_LT(arrivals[0], deadline);
}

TEST(RestClientDeadlineTest, NoRetryOfAWriteEndsPastItsDeadline) {
  auto transport = std::make_unique<ScriptedTransport>();
  ScriptedTransport* t = transport.get();
  t->answers = {{0, ""}, {0, ""}, {0, ""}, {200, "{}"}};  // slurmrestd down, then up
  absl::Duration slept;
  RestClient client(std::move(transport), MakeStaticCredentials({"slurm", "tok"}), kSlurmRetryPolicy,
                    [&](absl::Duration d) { slept += d; });
  // 250 ms left when the write starts: the first retry (after 100 ms) fits, the second (200 ms
  // more) would end past the deadline.
  client.BoundWrites([&] { return absl::Milliseconds(250) - slept; }, absl::Seconds(60));
  const nlohmann::json body = {{"hold", true}};
  absl::StatusOr<RestResponse> r = client.Call("POST", "/slurm/v0.0.38/job/7", &body);
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("abandoned"));
  ASSERT_EQ(t->seen.size(), 2u);
  EXPECT_EQ(slept, absl::Milliseconds(100));
  // Each attempt's timeout is the time it had left.
  EXPECT_EQ(t->seen[0].timeout, absl::Milliseconds(250));
  EXPECT_EQ(t->seen[1].timeout, absl::Milliseconds(150));
}

TEST(RestClientDeadlineTest, ReadsAreNotBoundedButARequeueIs) {
  auto transport = std::make_unique<ScriptedTransport>();
  ScriptedTransport* t = transport.get();
  t->answers = {{200, "{}"}, {200, "{}"}};
  RestClient client(std::move(transport), MakeStaticCredentials({"slurm", "tok"}), kSlurmRetryPolicy,
                    [](absl::Duration) {});
  client.BoundWrites([] { return absl::ZeroDuration(); }, absl::Seconds(60));  // a standby, or a lapsed lease
  EXPECT_TRUE(client.Call("GET", "/slurm/v0.0.45/jobs/?update_time=5").ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(client.Call("GET", "/slurm/v0.0.45/job/7/requeue").status()));
  const nlohmann::json body = {{"hold", true}};
  EXPECT_TRUE(absl::IsDeadlineExceeded(client.Call("POST", "/slurm/v0.0.45/job/7", &body).status()));
  ASSERT_EQ(t->seen.size(), 1u);
  EXPECT_EQ(t->seen[0].timeout, absl::ZeroDuration()) << "a read keeps the transport's own timeout";
}

// A write of several requests (UpdateJob with a priority: release, then priority and begin; a
// placeholder lend likewise) asks again before each: once the time is up the next step is not sent.
TEST(RestClientDeadlineTest, EachStepOfAMultiStepWriteAsksAgain) {
  auto transport = std::make_unique<ScriptedTransport>();
  ScriptedTransport* t = transport.get();
  t->answers = {{200, R"({"errors":[]})"}, {200, R"({"errors":[]})"}};
  auto client = std::make_shared<RestClient>(std::move(transport), MakeStaticCredentials({"slurm", "tok"}),
                                             RetryPolicy{.max_attempts = 1}, [](absl::Duration) {});
  // The lease ends as the first step lands.
  client->BoundWrites([t] { return t->seen.empty() ? absl::Seconds(5) : absl::ZeroDuration(); }, absl::Seconds(60));
  std::unique_ptr<SlurmApi> api = MakeRestSlurmApi(client, ApiVersion::kV0044, nullptr);
  JobUpdate start;
  start.priority = 4000000000u;
  start.begin_now = true;
  const absl::Status s = api->UpdateJob(42, start);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_EQ(t->seen.size(), 1u) << "the second step was not sent";
}

}  // namespace
}  // namespace onequeue::slurm
