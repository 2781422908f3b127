// An informer whose watch is open and quiet does not wake its thread (issue 26: the idle daemon
// woke ~5,600 times a minute, most of it its informer threads polling their watch every 100 ms),
// yet an event that arrives is handled at once and Stop() still ends the watch promptly. The
// informer's thread is found by its name ("oq-inf-<resource>", cut to 15 characters).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "k8s_client/informer.h"
#include "k8s_client/models.h"

namespace onequeue::k8s {
namespace {

// Voluntary context switches of the one thread named `name`; -1 unless exactly one has that name.
int64_t ThreadSwitches(absl::string_view name) {
  int64_t found = -1;
  int threads = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string comm_name;
    std::getline(comm, comm_name);
    if (comm_name != name) continue;
    ++threads;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      absl::string_view v = line;
      if (absl::ConsumePrefix(&v, "voluntary_ctxt_switches:")) {
        if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(v), &found)) found = -1;
      }
    }
  }
  return threads == 1 ? found : -1;
}

// A watch that stays open until cancelled; the test sends it chunks.
class QuietStream : public HttpStream {
 public:
  explicit QuietStream(HttpTransport::StreamDoneCallback done) : done_(std::move(done)) {}
  ~QuietStream() override { Cancel(); }
  void Cancel() override {
    std::call_once(once_, [this] { done_(absl::CancelledError("cancelled")); });
  }

 private:
  HttpTransport::StreamDoneCallback done_;
  std::once_flag once_;
};

// An empty pod list, then one watch that sends nothing until Send() is called.
class QuietWatchTransport : public HttpTransport {
 public:
  void SendAsync(HttpRequest, ResponseCallback done) override {
    done(HttpResponse{200, R"({"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[]})", std::nullopt});
  }
  std::unique_ptr<HttpStream> OpenStream(HttpRequest, ChunkCallback on_chunk, StreamDoneCallback on_done) override {
    absl::MutexLock l(&mu_);
    on_chunk_ = std::move(on_chunk);
    ++watches_;
    return std::make_unique<QuietStream>(std::move(on_done));
  }
  bool AwaitWatch(absl::Duration timeout) {
    absl::MutexLock l(&mu_);
    auto open = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return watches_ > 0; };
    return mu_.AwaitWithTimeout(absl::Condition(&open), timeout);
  }
  void Send(absl::string_view chunk) {
    absl::MutexLock l(&mu_);
    on_chunk_(chunk);
  }

 private:
  absl::Mutex mu_;
  ChunkCallback on_chunk_ ABSL_GUARDED_BY(mu_);
  int watches_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(InformerWakeupTest, AQuietWatchDoesNotWakeTheInformerThreadButAnEventIsHandledAtOnce) {
  ClientConfig config;
  config.qps = 0;
  auto owned = std::make_unique<QuietWatchTransport>();
  QuietWatchTransport* transport = owned.get();
  RestClient client(config, std::move(owned));
  absl::Mutex mu;
  absl::Time added_at = absl::InfinitePast();
  InformerHandlers<Pod> handlers;
  handlers.on_add = [&](const Pod&) {
    absl::MutexLock l(&mu);
    added_at = absl::Now();
  };
  Informer<Pod> informer(&client, kPods, InformerOptions{}, handlers);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  ASSERT_TRUE(transport->AwaitWatch(absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(200));  // the thread settles into its wait

  const int64_t before = ThreadSwitches("oq-inf-pods");
  ASSERT_GE(before, 0) << "no single thread named oq-inf-pods";
  absl::SleepFor(absl::Seconds(2));
  const int64_t after = ThreadSwitches("oq-inf-pods");
  // Polling every 100 ms woke it 20 times in these 2 s; waiting on the watch's data, not at all.
  EXPECT_LE(after - before, 2) << "the informer thread woke " << (after - before) << " times with nothing to do";

  const absl::Time sent = absl::Now();
  transport->Send(R"({"type":"ADDED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"2"}}})" "\n");
  {
    absl::MutexLock l(&mu);
    auto seen = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return added_at != absl::InfinitePast(); };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&seen), absl::Seconds(5)));
    EXPECT_LT(added_at - sent, absl::Milliseconds(500)) << "the event waited";
  }
  const absl::Time stop = absl::Now();
  informer.Stop();
  EXPECT_LT(absl::Now() - stop, absl::Milliseconds(500)) << "Stop() waited for the quiet watch";
  EXPECT_EQ(informer.Size(), 1u);
}

}  // namespace
}  // namespace onequeue::k8s
