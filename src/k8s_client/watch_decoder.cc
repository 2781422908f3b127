#include "k8s_client/watch_decoder.h"

#include "absl/strings/str_cat.h"
#include "k8s_client/api_status.h"
#include "k8s_client/simdjson_fields.h"

namespace onequeue::k8s {

absl::StatusOr<WatchEvent> ParseWatchEventLine(absl::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "watch: event is not a JSON object: ", line.substr(0, 120)));
  }
  auto type_it = j.find("type");
  auto obj_it = j.find("object");
  if (type_it == j.end() || !type_it->is_string() || obj_it == j.end() || !obj_it->is_object()) {
    return absl::InvalidArgumentError("watch: event lacks a string \"type\" or an object \"object\"");
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  WatchEvent ev;
  if (type == "ADDED") {
    ev.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    ev.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    ev.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    ev.type = WatchEventType::kError;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("watch: unknown event type \"", type, "\""));
  }
  ev.object = std::move(*obj_it);
  auto meta = ev.object.find("metadata");
  if (meta != ev.object.end() && meta->is_object()) {
    auto rv = meta->find("resourceVersion");
    if (rv != meta->end() && rv->is_string()) ev.resource_version = rv->get<std::string>();
  }
  if (ev.type != WatchEventType::kError && ev.type != WatchEventType::kBookmark &&
      (meta == ev.object.end() || !meta->is_object())) {
    return absl::InvalidArgumentError("watch: object without metadata");
  }
  return ev;
}

absl::Status WatchErrorStatus(const WatchEvent& event) {
  int code = 500;
  auto it = event.object.find("code");
  if (it != event.object.end() && it->is_number_integer()) code = it->get<int>();
  if (code < 400 || code > 599) code = 500;
  return StatusFromHttp(code, event.object.dump());
}

WatchDecoder::WatchDecoder(Handler handler, FastHandler fast, size_t max_line_bytes)
    : handler_(std::move(handler)),
      fast_(std::move(fast)),
      document_(std::make_unique<SimdjsonDocument>()),
      max_line_bytes_(max_line_bytes) {}

WatchDecoder::~WatchDecoder() = default;

bool WatchDecoder::HandleFast(absl::string_view line) {
  using json_fields::Field;
  const simdjson::dom::element* root = document_->Parse(std::string_view(line.data(), line.size()));
  if (root == nullptr || !json_fields::IsObject(*root)) return false;
  const simdjson::dom::element type = Field(*root, "type");
  const simdjson::dom::element object = Field(*root, "object");
  if (!json_fields::IsString(type) || !json_fields::IsObject(object)) return false;
  const std::string_view name = type.get_string().value_unsafe();
  WatchEventType t;
  if (name == "ADDED") {
    t = WatchEventType::kAdded;
  } else if (name == "MODIFIED") {
    t = WatchEventType::kModified;
  } else if (name == "DELETED") {
    t = WatchEventType::kDeleted;
  } else if (name == "BOOKMARK") {
    t = WatchEventType::kBookmark;
  } else {
    return false;  // ERROR, or an unknown type: ParseWatchEventLine's event or error
  }
  const simdjson::dom::element meta = Field(object, "metadata");
  if (t != WatchEventType::kBookmark && !json_fields::IsObject(meta)) return false;
  const simdjson::dom::element rv = Field(meta, "resourceVersion");
  fast_(t, object, json_fields::IsString(rv) ? rv.get_string().value_unsafe() : std::string_view());
  return true;
}

absl::Status WatchDecoder::HandleLine(absl::string_view line) {
  if (line.find_first_not_of(" \r\t") == absl::string_view::npos) return absl::OkStatus();
  if (fast_ && HandleFast(line)) return absl::OkStatus();
  absl::StatusOr<WatchEvent> ev = ParseWatchEventLine(line);
  if (!ev.ok()) return ev.status();
  handler_(*std::move(ev));
  return absl::OkStatus();
}

absl::Status WatchDecoder::Feed(absl::string_view chunk) {
  while (!chunk.empty()) {
    const size_t nl = chunk.find('\n');
    if (nl == absl::string_view::npos) {
      if (partial_.size() + chunk.size() > max_line_bytes_) {
        return LimitExceededError(absl::StrCat("watch: an event line longer than ", max_line_bytes_, " bytes"));
      }
      partial_.append(chunk.data(), chunk.size());
      return absl::OkStatus();
    }
    absl::Status s;
    if (partial_.empty()) {
      s = HandleLine(chunk.substr(0, nl));
    } else {
      partial_.append(chunk.data(), nl);
      std::string line = std::move(partial_);
      partial_.clear();
      s = HandleLine(line);
    }
    if (!s.ok()) return s;
    chunk.remove_prefix(nl + 1);
  }
  return absl::OkStatus();
}

bool WatchBacklog::Append(absl::string_view chunk) {
  if (overflowed_) return false;
  if (bytes_.size() > max_bytes_ || chunk.size() > max_bytes_ - bytes_.size()) {
    overflowed_ = true;
    bytes_.clear();
    bytes_.shrink_to_fit();
    return false;
  }
  bytes_.append(chunk.data(), chunk.size());
  return true;
}

absl::Status WatchBacklog::OverflowError(absl::string_view resource) const {
  return LimitExceededError(absl::StrCat("watch of ", resource, ": more than ", max_bytes_,
                                         " bytes of events received and not handled yet "
                                         "(kubernetes.maxResponseBytes); relisting"));
}

}  // namespace onequeue::k8s
