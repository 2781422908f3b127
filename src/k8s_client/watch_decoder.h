// Incremental decoder of a watch stream (?watch=true, JSON): one event object per line,
// {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}. Bytes arrive in arbitrary
// chunks (HTTP/2 DATA frames); the decoder keeps the partial line until its newline arrives.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "k8s_client/simdjson_document.h"
#include "nlohmann/json.hpp"

namespace onequeue::k8s {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;           // the object (for kError: the Status object)
  std::string resource_version;    // object.metadata.resourceVersion
};

// Parses one complete event line. Malformed input is InvalidArgument; never throws.
absl::StatusOr<WatchEvent> ParseWatchEventLine(absl::string_view line);

// For an ERROR event: the absl::Status it stands for (410 Expired -> OutOfRange, ...).
absl::Status WatchErrorStatus(const WatchEvent& event);

class WatchDecoder {
 public:
  using Handler = std::function<void(WatchEvent)>;
  // An ADDED, MODIFIED, DELETED or BOOKMARK event read with simdjson's DOM (issue 26): `object`
  // and `resource_version` live until the handler returns.
  using FastHandler = std::function<void(WatchEventType type, const simdjson::dom::element& object,
                                         std::string_view resource_version)>;
  // A line longer than `max_line_bytes` is an error (a broken stream must not eat all memory).
  explicit WatchDecoder(Handler handler, size_t max_line_bytes = 64 << 20)
      : handler_(std::move(handler)), max_line_bytes_(max_line_bytes) {}
  // Reads each line with simdjson first (one parser, reused) and gives `fast` the events it can:
  // the framing is ParseWatchEventLine's (the same event type, object and resourceVersion).
  // Lines simdjson refuses, ERROR events and malformed events go to ParseWatchEventLine and
  // `handler` as without `fast`, so errors and their messages are unchanged.
  WatchDecoder(Handler handler, FastHandler fast, size_t max_line_bytes = 64 << 20);
  ~WatchDecoder();

  // Feeds a chunk; calls the handler for every complete event. Returns the first decode error;
  // after an error the stream must be dropped (the decoder does not resynchronise).
  absl::Status Feed(absl::string_view chunk);
  // True when no partial line is pending (the stream ended on an event boundary).
  bool AtBoundary() const { return partial_.find_first_not_of(" \r\n\t") == std::string::npos; }

 private:
  absl::Status HandleLine(absl::string_view line);
  bool HandleFast(absl::string_view line);  // false: not an event `fast_` takes
  Handler handler_;
  FastHandler fast_;
  std::unique_ptr<SimdjsonDocument> document_;  // with fast_
  size_t max_line_bytes_;
  std::string partial_;
};

// The bytes a watch has received and not handled yet: the transport thread appends, the
// informer's thread takes them to decode. Bounded: handlers slower than the events would
// otherwise grow it without end. Not thread-safe (the caller holds its own lock).
class WatchBacklog {
 public:
  explicit WatchBacklog(size_t max_bytes) : max_bytes_(max_bytes) {}
  // False when the chunk would take the backlog past the bound: from then on the backlog is
  // overflowed, keeps nothing and the watch must end (events were lost) and the informer relist.
  bool Append(absl::string_view chunk);
  std::string Take() { return std::exchange(bytes_, std::string()); }
  bool empty() const { return bytes_.empty(); }
  bool overflowed() const { return overflowed_; }
  // ResourceExhausted naming the resource and the bound.
  absl::Status OverflowError(absl::string_view resource) const;

 private:
  size_t max_bytes_;
  std::string bytes_;
  bool overflowed_ = false;
};

}  // namespace onequeue::k8s
