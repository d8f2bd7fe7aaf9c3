// The prompt tokens of chat and completion requests
// (tools/loom/serve/chat_prompt.hpp): the same tokens `loom chat` feeds a
// conversation turn by turn, and `loom run` a prompt.
#include "serve/chat_prompt.hpp"

#include <gtest/gtest.h>

#include "fake_engine.hpp"

namespace loom::cli::serve {
namespace {

using llm::ChatFormat;
using llm::ChatTemplate;
using llm::TokenId;

std::vector<TokenId> cat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ServeChatPrompt, FormatsByName) {
  EXPECT_EQ(chat_format_named("chatml"), ChatFormat::kChatml);
  EXPECT_EQ(chat_format_named("llama3"), ChatFormat::kLlama3);
  EXPECT_EQ(chat_format_named("plain"), ChatFormat::kPlain);
  EXPECT_EQ(chat_format_named("no such format"), ChatFormat::kPlain);
}

TEST(ServeChatPrompt, OneTurnIsLoomChatsFirstTurn) {
  const llm::Tokenizer tok = test::fake_tokenizer();
  const ChatTemplate f(ChatFormat::kChatml);
  std::string param;
  auto ids = chat_prompt_tokens({{"system", "Be brief."}, {"user", "Hi"}}, f, tok, &param);
  ASSERT_TRUE(ids.ok()) << ids.status().to_string();
  EXPECT_EQ(*ids, tok.encode_prompt(f.user_turn("Be brief.", "Hi", true)));
  EXPECT_EQ(ids->front(), tok.special().bos);
  // The special-token text became the control tokens.
  EXPECT_NE(std::find(ids->begin(), ids->end(), tok.find("<|im_start|>")), ids->end());
}

TEST(ServeChatPrompt, EarlierRepliesEndWithTheEndOfTurnToken) {
  const llm::Tokenizer tok = test::fake_tokenizer();
  const ChatTemplate f(ChatFormat::kChatml);
  auto ids = chat_prompt_tokens({{"user", "Hi"}, {"assistant", "Hello."}, {"user", "More"}}, f, tok, nullptr);
  ASSERT_TRUE(ids.ok()) << ids.status().to_string();
  std::vector<TokenId> want = tok.encode_prompt(f.user_turn("", "Hi", true));
  want = cat(want, tok.encode("Hello.", false));
  want.push_back(tok.special().eot);
  want = cat(want, tok.encode(f.after_reply() + f.user_turn("", "More", false), false));
  EXPECT_EQ(*ids, want);
}

TEST(ServeChatPrompt, SameRoleMessagesJoin) {
  const llm::Tokenizer tok = test::fake_tokenizer();
  const ChatTemplate f(ChatFormat::kPlain);
  auto ids = chat_prompt_tokens({{"system", "A"}, {"system", "B"}, {"user", "x"}, {"user", "y"}}, f, tok, nullptr);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, tok.encode_prompt(f.user_turn("A\n\nB", "x\n\ny", true)));
}

TEST(ServeChatPrompt, ConversationShapeErrorsNameTheMessage) {
  const llm::Tokenizer tok = test::fake_tokenizer();
  const ChatTemplate f(ChatFormat::kChatml);
  std::string param;
  EXPECT_FALSE(chat_prompt_tokens({{"user", "a"}, {"system", "b"}, {"user", "c"}}, f, tok, &param).ok());
  EXPECT_EQ(param, "messages[1].role");
  EXPECT_FALSE(chat_prompt_tokens({{"assistant", "a"}, {"user", "c"}}, f, tok, &param).ok());
  EXPECT_EQ(param, "messages[0].role");
  EXPECT_FALSE(chat_prompt_tokens({{"user", "a"}, {"assistant", "b"}}, f, tok, &param).ok());
  EXPECT_EQ(param, "messages");
  EXPECT_FALSE(chat_prompt_tokens({{"system", "a"}}, f, tok, &param).ok());
  EXPECT_EQ(param, "messages");
}

TEST(ServeChatPrompt, CompletionPromptIsLoomRuns) {
  const llm::Tokenizer tok = test::fake_tokenizer();
  OpenAiRequest r;
  r.prompt = "Once upon";
  auto ids = completion_prompt_tokens(r, tok, nullptr);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, tok.encode_prompt("Once upon"));
  r.prompt.clear();
  EXPECT_EQ(*completion_prompt_tokens(r, tok, nullptr), (std::vector<TokenId>{tok.special().bos}));
  r.prompt_is_ids = true;
  r.prompt_ids = {1, 5, 7};
  EXPECT_EQ(*completion_prompt_tokens(r, tok, nullptr), r.prompt_ids);
  r.prompt_ids = {1, tok.n_vocab()};
  std::string param;
  auto bad = completion_prompt_tokens(r, tok, &param);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(param, "prompt[1]");
  EXPECT_NE(bad.status().message().find(std::to_string(tok.n_vocab())), std::string::npos);
}

}  // namespace
}  // namespace loom::cli::serve
