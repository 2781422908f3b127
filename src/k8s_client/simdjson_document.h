// simdjson's DOM parser and a padded copy of the input, both reused from one document to the next
// (issue 26): what the informers decode list pages and watch events with. simdjson reads past the
// end of its input (SIMDJSON_PADDING bytes), so the text is copied into a buffer that has them;
// the copy costs a few percent of the parse, and the buffer and the parser's own memory grow to
// the largest document seen and are then reused.
#pragma once

#include <memory>
#include <string_view>

namespace simdjson::dom {
class element;
}  // namespace simdjson::dom

namespace onequeue::k8s {

class SimdjsonDocument {
 public:
  SimdjsonDocument();
  ~SimdjsonDocument();
  SimdjsonDocument(const SimdjsonDocument&) = delete;
  SimdjsonDocument& operator=(const SimdjsonDocument&) = delete;

  // The root of `text`, valid until the next Parse or the end of this object; nullptr when
  // simdjson refuses the text. Every text simdjson accepts, nlohmann accepts too; simdjson refuses
  // a few that nlohmann accepts (a UTF-8 byte order mark, integers past 64 bits): callers fall
  // back to nlohmann on nullptr, so the outcome is nlohmann's.
  const simdjson::dom::element* Parse(std::string_view text);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace onequeue::k8s
