// What the llm tests on synthetic models share: greedy generation from
// stories260K's "Once upon a time" and a fixed prompt of its token ids.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm/tokenizer/tokenizer.hpp"

namespace loom::test {

// n greedy tokens after "Once upon a time" with the model's own tokenizer
// (empty, with a test failure, when something fails).
inline std::vector<llm::TokenId> greedy(llm::LlamaModel* m, int32_t n) {
  auto t = llm::Tokenizer::from_gguf(m->file());
  EXPECT_TRUE(t.ok());
  auto s = llm::LlamaSession::create(m, {});
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!t.ok() || !s.ok()) return {};
  llm::GenerateOptions g;
  g.n_predict = n;
  auto r = llm::generate(**s, *t, "Once upon a time", g);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->generated_tokens : std::vector<llm::TokenId>{};
}

// Twelve token ids of stories260K's vocabulary, BOS first.
inline const std::vector<llm::TokenId>& story_prompt() {
  static const std::vector<llm::TokenId> p = {1, 403, 407, 261, 378, 436, 264, 325, 301, 280, 334, 295};
  return p;
}

}  // namespace loom::test
