#include "k8s_client/simdjson_document.h"

#include <cstring>
#include <vector>

#include <simdjson.h>

namespace onequeue::k8s {

struct SimdjsonDocument::State {
  simdjson::dom::parser parser;
  std::vector<char> padded;  // the text, then SIMDJSON_PADDING bytes
  simdjson::dom::element root;
};

SimdjsonDocument::SimdjsonDocument() : state_(std::make_unique<State>()) {}
SimdjsonDocument::~SimdjsonDocument() = default;

const simdjson::dom::element* SimdjsonDocument::Parse(std::string_view text) {
  std::vector<char>& buffer = state_->padded;
  if (buffer.size() < text.size() + simdjson::SIMDJSON_PADDING) buffer.resize(text.size() + simdjson::SIMDJSON_PADDING);
  if (!text.empty()) std::memcpy(buffer.data(), text.data(), text.size());
  std::memset(buffer.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
  if (state_->parser.parse(buffer.data(), text.size(), /*realloc_if_needed=*/false).get(state_->root)) return nullptr;
  return &state_->root;
}

}  // namespace onequeue::k8s
