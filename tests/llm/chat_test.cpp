// Chat formats: recognised from real template texts (the phi-3 and Qwen2
// vocabulary files carry theirs), rendered turn by turn into the token ids
// the model's tokenizer gives the special tokens; a conversation with
// stories260K keeps its KV cache across turns.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "llm/chat/chat.hpp"
#include "llm/model/llama_model.hpp"
#include "llm_test_util.hpp"
#include "loom/runtime/gguf.hpp"
#include "loom/registry/registry.hpp"

namespace loom::llm {
namespace {

std::string vocab(const std::string& name) { return test::models_dir() + "/vocab/ggml-vocab-" + name + ".gguf"; }

TEST(ChatFormat, RecognisedFromTemplateMarkers) {
  EXPECT_EQ(detect_chat_format(""), ChatFormat::kPlain);
  EXPECT_EQ(detect_chat_format("{{ messages }}"), ChatFormat::kPlain);
  EXPECT_EQ(detect_chat_format("{{'<|im_start|>' + message['role'] + '\\n'}}"), ChatFormat::kChatml);
  EXPECT_EQ(detect_chat_format("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"),
            ChatFormat::kLlama3);
  EXPECT_EQ(detect_chat_format("{{ bos_token + '[INST] <<SYS>>\\n' }}"), ChatFormat::kLlama2);
  EXPECT_EQ(detect_chat_format("{{ '[INST] ' + message['content'] + ' [/INST]' }}"), ChatFormat::kMistral);
  EXPECT_EQ(detect_chat_format("{{'<|user|>' + '\\n' + message['content'] + '<|end|>'}}"), ChatFormat::kPhi3);
  EXPECT_EQ(detect_chat_format("{{ '<|user|>\\n' + message['content'] + eos_token }}"), ChatFormat::kZephyr);
  EXPECT_EQ(detect_chat_format("{{ '<start_of_turn>' + role + '\\n' }}"), ChatFormat::kGemma);
  // Phi-4 writes chatml's markers with its own separator.
  EXPECT_EQ(detect_chat_format("{{'<|im_start|>' + message['role'] + '<|im_sep|>' + message['content']}}"),
            ChatFormat::kPhi4);
  // DeepSeek-V3 / R1 (and the R1 distills of Qwen and Llama).
  EXPECT_EQ(detect_chat_format("{{'<｜User｜>' + message['content']}}{{'<｜Assistant｜>'}}"),
            ChatFormat::kDeepseek3);
  // Mistral Small 3 and later: [SYSTEM_PROMPT], with or without a space after the markers.
  EXPECT_EQ(detect_chat_format("{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}"
                               "{{- '[INST]' + message['content'] + '[/INST]' }}"),
            ChatFormat::kMistralV7);
  EXPECT_EQ(detect_chat_format("{{- '[SYSTEM_PROMPT] ' + system_message + '[/SYSTEM_PROMPT]' }}"
                               "{{- '[INST] ' + message['content'] + '[/INST]' }}"),
            ChatFormat::kMistralV7Spaced);
  // IBM Granite 3.
  EXPECT_EQ(detect_chat_format("{{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' + message['content'] + "
                               "'<|end_of_text|>\n' }}"),
            ChatFormat::kGranite);
  // LG EXAONE 3 / 3.5.
  EXPECT_EQ(detect_chat_format("{{ '[|system|]' + message['content'] + '[|endofturn|]\n' }}{{ '[|user|]' }}"),
            ChatFormat::kExaone3);
  // Cohere Command R / Aya.
  EXPECT_EQ(detect_chat_format("{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + message['content'] }}"),
            ChatFormat::kCommandR);
  // GLM-4 (it writes zephyr's <|user|> too).
  EXPECT_EQ(detect_chat_format("[gMASK]<sop>{% for item in messages %}{% if item['role'] == 'user' %}<|user|>\n"
                               "{{ item['content'] }}{% endif %}{% endfor %}<|assistant|>"),
            ChatFormat::kGlm4);
  for (const char* name :
       {"plain", "chatml", "llama3", "llama2", "mistral", "phi3", "gemma", "zephyr", "phi4", "deepseek3", "mistral-v7",
        "mistral-v7-spaced", "granite", "exaone3", "command-r", "glm4", "seed-oss"}) {
    ChatFormat f;
    ASSERT_TRUE(chat_format_from_name(name, &f)) << name;
    EXPECT_STREQ(chat_format_name(f), name);
  }
  ChatFormat f;
  EXPECT_FALSE(chat_format_from_name("jinja", &f));
}

TEST(ChatFormat, RealFilesTemplates) {
  for (const auto& [name, want] : {std::pair<const char*, ChatFormat>{"phi-3", ChatFormat::kPhi3},
                                   std::pair<const char*, ChatFormat>{"qwen2", ChatFormat::kChatml}}) {
    if (!std::filesystem::exists(vocab(name))) GTEST_SKIP() << vocab(name) << " not found";
    auto f = GgufFile::open(vocab(name));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto t = f->get_str("tokenizer.chat_template");
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(detect_chat_format(*t), want) << name;
  }
}

TEST(ChatFormat, TurnsRenderEachLayout) {
  EXPECT_EQ(ChatTemplate(ChatFormat::kChatml).user_turn("Be brief.", "Hi", true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kChatml).user_turn("Be brief.", "Hi", false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kLlama3).user_turn("", "Hi", true),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kLlama2).user_turn("S", "Hi", true), "[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST]");
  EXPECT_EQ(ChatTemplate(ChatFormat::kLlama2).user_turn("S", "Hi", false), "<s>[INST] Hi [/INST]");
  EXPECT_EQ(ChatTemplate(ChatFormat::kPhi3).user_turn("", "Hi", true), "<|user|>\nHi<|end|>\n<|assistant|>\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kGemma).user_turn("S", "Hi", true),
            "<start_of_turn>user\nS\n\nHi<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kPhi4).user_turn("S", "Hi", true),
            "<|im_start|>system<|im_sep|>S<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|>");
  EXPECT_EQ(ChatTemplate(ChatFormat::kPhi4).after_reply(), "");
  EXPECT_EQ(ChatTemplate(ChatFormat::kDeepseek3).user_turn("S", "Hi", true), "S<｜User｜>Hi<｜Assistant｜>");
  EXPECT_EQ(ChatTemplate(ChatFormat::kDeepseek3).user_turn("S", "Hi", false), "<｜User｜>Hi<｜Assistant｜>");
  EXPECT_EQ(ChatTemplate(ChatFormat::kDeepseek3).after_reply(), "");
  EXPECT_EQ(ChatTemplate(ChatFormat::kMistralV7).user_turn("S", "Hi", true), "[SYSTEM_PROMPT]S[/SYSTEM_PROMPT][INST]Hi[/INST]");
  EXPECT_EQ(ChatTemplate(ChatFormat::kMistralV7).user_turn("S", "Hi", false), "[INST]Hi[/INST]");
  EXPECT_EQ(ChatTemplate(ChatFormat::kMistralV7Spaced).user_turn("S", "Hi", true),
            "[SYSTEM_PROMPT] S[/SYSTEM_PROMPT][INST] Hi[/INST]");
  EXPECT_EQ(ChatTemplate(ChatFormat::kMistralV7).after_reply(), "");
  EXPECT_EQ(ChatTemplate(ChatFormat::kChatml).after_reply(), "\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kGranite).user_turn("S", "Hi", true),
            "<|start_of_role|>system<|end_of_role|>S<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hi"
            "<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>");
  EXPECT_EQ(ChatTemplate(ChatFormat::kGranite).user_turn("S", "Hi", false),
            "<|start_of_role|>user<|end_of_role|>Hi<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>");
  EXPECT_EQ(ChatTemplate(ChatFormat::kGranite).after_reply(), "\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kExaone3).user_turn("S", "Hi", true),
            "[|system|]S[|endofturn|]\n[|user|]Hi\n[|assistant|]");
  EXPECT_EQ(ChatTemplate(ChatFormat::kExaone3).user_turn("S", "Hi", false), "[|user|]Hi\n[|assistant|]");
  EXPECT_EQ(ChatTemplate(ChatFormat::kExaone3).after_reply(), "\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kCommandR).user_turn("S", "Hi", true),
            "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>S<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi"
            "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
  EXPECT_EQ(ChatTemplate(ChatFormat::kCommandR).after_reply(), "");
  EXPECT_EQ(ChatTemplate(ChatFormat::kGlm4).user_turn("S", "Hi", true),
            "[gMASK]<sop><|system|>\nS<|user|>\nHi<|assistant|>\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kGlm4).user_turn("S", "Hi", false), "<|user|>\nHi<|assistant|>\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kGlm4).after_reply(), "");
  // ByteDance Seed-OSS.
  EXPECT_EQ(detect_chat_format("{{ '<seed:bos>' + message['role'] + '\n' + message['content'] + '<seed:eos>' }}"),
            ChatFormat::kSeedOss);
  EXPECT_EQ(ChatTemplate(ChatFormat::kSeedOss).user_turn("S", "Hi", true),
            "<seed:bos>system\nS<seed:eos><seed:bos>user\nHi<seed:eos><seed:bos>assistant\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kSeedOss).user_turn("S", "Hi", false),
            "<seed:bos>user\nHi<seed:eos><seed:bos>assistant\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kSeedOss).after_reply(), "");
  EXPECT_EQ(ChatTemplate(ChatFormat::kLlama3).after_reply(), "");
}

// The special tokens of a rendered turn become single ids in the real
// tokenizer (so the model sees its format, not the text of it).
TEST(ChatFormat, SpecialTokensOfATurnAreSingleIds) {
  if (!std::filesystem::exists(vocab("qwen2"))) GTEST_SKIP() << vocab("qwen2") << " not found";
  auto f = GgufFile::open(vocab("qwen2"));
  ASSERT_TRUE(f.ok());
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<TokenId> ids = tok->encode(ChatTemplate(ChatFormat::kChatml).user_turn("", "Hi", true), false);
  const TokenId start = tok->find("<|im_start|>"), end = tok->find("<|im_end|>");
  ASSERT_NE(start, kNoToken);
  ASSERT_NE(end, kNoToken);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), start), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), end), 1);
  EXPECT_TRUE(tok->is_eog(end));
}

TEST(Chat, TurnsShareTheCacheAndFollowTheContext) {
  if (!std::filesystem::exists(test::stories_path())) GTEST_SKIP() << test::stories_path() << " not found";
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR};
  o.use_env = false;
  auto reg = registry::Registry::load(o);
  ASSERT_NE(reg->device("cpu"), nullptr);
  auto model = LlamaModel::load(test::stories_path(), reg->device("cpu"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SessionOptions so;
  so.n_ctx = 96;
  auto session = LlamaSession::create(model->get(), so);
  ASSERT_TRUE(session.ok());
  auto chat = Chat::create(session->get(), (*model)->tokenizer(), ChatTemplate(ChatFormat::kPlain), "", {});
  ASSERT_TRUE(chat.ok());
  std::string streamed;
  auto r1 = chat->send("Once upon a time", 12, [&](const std::string& s) { streamed += s; });
  ASSERT_TRUE(r1.ok()) << r1.status().to_string();
  EXPECT_EQ(streamed, r1->text);
  EXPECT_FALSE(r1->text.empty());
  const int64_t after_one = chat->tokens_used();
  auto r2 = chat->send("Then?", 12, nullptr);
  ASSERT_TRUE(r2.ok()) << r2.status().to_string();
  EXPECT_GT(chat->tokens_used(), after_one);  // the second turn continued the cache
  // A message that cannot fit is refused without touching the conversation.
  const int64_t used = chat->tokens_used();
  auto r3 = chat->send(std::string(400, 'a'), 4, nullptr);
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.status().message().find("left of the context of 96"), std::string::npos) << r3.status().message();
  EXPECT_EQ(chat->tokens_used(), used);
}

}  // namespace
}  // namespace loom::llm
