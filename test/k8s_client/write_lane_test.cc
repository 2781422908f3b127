// WriteLane (src/k8s_client/write_lane.h): at most N best-effort writes at the API server, the
// rest queued in order, a bounded queue, no recursion when answers come back synchronously, and
// nothing sent after Close(). Over a transport that holds each request until the test answers it.
#include "k8s_client/write_lane.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "k8s_client/scheduler_api.h"

namespace onequeue::k8s {
namespace {

class HeldTransport : public HttpTransport {
 public:
  void SendAsync(HttpRequest request, ResponseCallback done) override {
    sent.push_back(request.path);
    if (answer_at_once) {
      done(HttpResponse{201, "{}", std::nullopt});
      return;
    }
    held.push_back(std::move(done));
  }
  std::unique_ptr<HttpStream> OpenStream(HttpRequest, ChunkCallback, StreamDoneCallback done) override {
    done(absl::UnimplementedError("no streams"));
    return nullptr;
  }
  // Answers the oldest request still held.
  void AnswerOldest() {
    ResponseCallback done = std::move(held.front());
    held.pop_front();
    done(HttpResponse{201, "{}", std::nullopt});
  }
  std::vector<std::string> sent;
  std::deque<ResponseCallback> held;
  bool answer_at_once = false;
};

struct Lane {
  explicit Lane(WriteLane::Options options) {
    auto t = std::make_unique<HeldTransport>();
    transport = t.get();
    ClientConfig config;
    config.qps = 0;
    client = std::make_unique<RestClient>(config, std::move(t));
    lane = WriteLane::Create(client.get(), options);
  }
  void Submit(int i) {
    HttpRequest r;
    r.method = "POST";
    r.path = "/w/" + std::to_string(i);
    lane->Submit(std::move(r), [this, i](absl::StatusOr<std::string> s) {
      done.push_back(i);
      codes.push_back(s.status().code());
    });
  }
  HeldTransport* transport;
  std::unique_ptr<RestClient> client;
  std::shared_ptr<WriteLane> lane;
  std::vector<int> done;
  std::vector<absl::StatusCode> codes;
};

TEST(WriteLane, AtMostMaxInFlightAreSentAndTheRestFollowInOrderAsAnswersCome) {
  Lane l({.max_in_flight = 2, .max_queued = 100});
  for (int i = 0; i < 5; ++i) l.Submit(i);
  EXPECT_EQ(l.transport->sent, (std::vector<std::string>{"/w/0", "/w/1"}));
  l.transport->AnswerOldest();
  EXPECT_EQ(l.transport->sent.size(), 3u);
  EXPECT_EQ(l.transport->held.size(), 2u);
  while (!l.transport->held.empty()) {
    EXPECT_LE(l.transport->held.size(), 2u);
    l.transport->AnswerOldest();
  }
  EXPECT_EQ(l.transport->sent, (std::vector<std::string>{"/w/0", "/w/1", "/w/2", "/w/3", "/w/4"}));
  EXPECT_EQ(l.done, (std::vector<int>{0, 1, 2, 3, 4}));
  const WriteLane::Counters c = l.lane->counters();
  EXPECT_EQ(c.sent, 5);
  EXPECT_EQ(c.peak_in_flight, 2);
  EXPECT_EQ(c.peak_queued, 3u);
}

TEST(WriteLane, AFullQueueRefusesAtOnceWithResourceExhaustedAndCountsIt) {
  Lane l({.max_in_flight = 1, .max_queued = 2});
  for (int i = 0; i < 3; ++i) l.Submit(i);  // one sent, two queued
  l.Submit(3);
  ASSERT_EQ(l.done, (std::vector<int>{3}));
  EXPECT_EQ(l.codes[0], absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(l.lane->counters().dropped, 1);
  while (!l.transport->held.empty()) l.transport->AnswerOldest();
  EXPECT_EQ(l.done, (std::vector<int>{3, 0, 1, 2}));
}

TEST(WriteLane, AnswersThatComeBackSynchronouslySendALongQueueByALoopNotByRecursion) {
  // 200,000 queued behind one held request; then every answer comes inside SendAsync. Sending the
  // next from the answer's callback by recursion would need 200,000 nested frames (the stack
  // overflows); the pump's loop sends them one after another.
  constexpr int kQueued = 200000;
  Lane l({.max_in_flight = 1, .max_queued = kQueued});
  for (int i = 0; i <= kQueued; ++i) l.Submit(i);
  ASSERT_EQ(l.transport->held.size(), 1u);
  l.transport->answer_at_once = true;
  l.transport->AnswerOldest();
  EXPECT_EQ(l.done.size(), static_cast<size_t>(kQueued + 1));
  EXPECT_EQ(l.done.back(), kQueued);
  EXPECT_EQ(l.lane->counters().sent, kQueued + 1);
}

TEST(WriteLane, CloseCancelsWhatIsQueuedAndNothingIsSentAfterIt) {
  Lane l({.max_in_flight = 1, .max_queued = 10});
  for (int i = 0; i < 3; ++i) l.Submit(i);
  l.lane->Close();
  EXPECT_EQ(l.done, (std::vector<int>{1, 2}));
  EXPECT_EQ(l.codes[0], absl::StatusCode::kCancelled);
  EXPECT_EQ(l.lane->counters().cancelled, 2);
  l.transport->AnswerOldest();  // the one in flight still ends
  EXPECT_EQ(l.done, (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(l.transport->sent.size(), 1u);
  l.Submit(9);  // refused: closed
  EXPECT_EQ(l.codes.back(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(l.transport->sent.size(), 1u);
}

TEST(WriteLane, FlushWaitsForWhatIsQueuedAndInFlightAndGivesUpAtItsTimeout) {
  Lane l({.max_in_flight = 1, .max_queued = 10});
  for (int i = 0; i < 3; ++i) l.Submit(i);
  EXPECT_FALSE(l.lane->Flush(absl::Milliseconds(20)));  // nothing answered yet
  std::thread server([&l] {
    for (int i = 0; i < 3; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
      l.transport->AnswerOldest();  // sends the next one from this thread
    }
  });
  EXPECT_TRUE(l.lane->Flush(absl::Seconds(30)));
  EXPECT_EQ(l.done, (std::vector<int>{0, 1, 2}));
  server.join();
  EXPECT_TRUE(l.lane->Flush(absl::ZeroDuration()));  // empty: at once
}

TEST(WriteLane, TheEventRecordersWritesGoThroughItsLane) {
  auto t = std::make_unique<HeldTransport>();
  HeldTransport* transport = t.get();
  ClientConfig config;
  config.qps = 0;
  RestClient client(config, std::move(t));
  EventRecorder recorder(&client, "onequeue", "test", EventCorrelator::Options{}, {.max_in_flight = 3, .max_queued = 100});
  for (int i = 0; i < 10; ++i) {
    recorder.RecordAsync(ObjectReference{.api_version = "v1", .kind = "Pod", .namespace_ = "ns", .name = "p" + std::to_string(i)}, "Normal", "Scheduled",
                         "Binding", "bound", absl::UnixEpoch() + absl::Seconds(i));
  }
  EXPECT_EQ(transport->sent.size(), 3u);
  EXPECT_EQ(recorder.lane_counters().peak_queued, 7u);
  while (!transport->held.empty()) transport->AnswerOldest();
  EXPECT_EQ(transport->sent.size(), 10u);
}

}  // namespace
}  // namespace onequeue::k8s
