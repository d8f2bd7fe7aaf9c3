// Chat formats: which conversation layout a model expects, recognised from
// the Jinja text in tokenizer.chat_template (loom does not run Jinja; it
// knows the common layouts and renders them directly), and the text each new
// turn adds. Thread-safe (immutable).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom::llm {

enum class ChatFormat {
  kPlain,            // no or unrecognised template: "User: ...\nAssistant:"
  kChatml,           // <|im_start|>role\n...<|im_end|> (Qwen, many others)
  kLlama3,           // <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
  kLlama2,           // <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] (Mistral without <<SYS>>)
  kMistral,          // [INST] ... [/INST] with the system text in the first user turn
  kPhi3,             // <|system|>\n...<|end|>\n<|user|>\n...<|end|>\n<|assistant|>\n
  kGemma,            // <start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n
  kZephyr,           // <|system|>\n...</s>\n<|user|>\n...</s>\n<|assistant|>\n
  kPhi4,             // <|im_start|>role<|im_sep|>...<|im_end|> (no newlines)
  kDeepseek3,        // system text, <｜User｜>...<｜Assistant｜> (DeepSeek-V3, R1 and its distills)
  kMistralV7,        // [SYSTEM_PROMPT]...[/SYSTEM_PROMPT][INST]...[/INST] (Mistral Small 3 and later)
  kMistralV7Spaced,  // the same with a space after each opening marker (older v7 templates)
  kGranite,          // <|start_of_role|>role<|end_of_role|>...<|end_of_text|>\n (IBM Granite 3)
  kExaone3,          // [|system|]...[|endofturn|]\n[|user|]...\n[|assistant|] (LG EXAONE 3 / 3.5)
  kCommandR,         // <|START_OF_TURN_TOKEN|><|USER_TOKEN|>...<|END_OF_TURN_TOKEN|> (Cohere Command R, Aya)
  kGlm4,             // [gMASK]<sop><|system|>\n...<|user|>\n...<|assistant|>\n (GLM-4)
  kSeedOss,          // <seed:bos>role\n...<seed:eos> (ByteDance Seed-OSS)
};

const char* chat_format_name(ChatFormat f);
// The format a template text describes; kPlain for "" or an unknown one.
ChatFormat detect_chat_format(std::string_view jinja);
// All recognised names, for messages ("chatml, llama3, ...").
std::string chat_format_names();
// The format named `name` ("plain" included); false for an unknown name.
bool chat_format_from_name(std::string_view name, ChatFormat* out);

// Renders the text a conversation grows by. Special tokens are written as
// their text (encode with parse_special turns them into ids).
class ChatTemplate {
 public:
  explicit ChatTemplate(ChatFormat f) : format_(f) {}
  ChatFormat format() const { return format_; }

  // The text that opens the assistant's reply to user message `msg`: for the
  // first turn (first == true) with the system text `sys` ("" for none)
  // and everything the format puts before it; later turns follow the
  // previous reply. The BOS the tokenizer adds itself is not included.
  std::string user_turn(const std::string& sys, const std::string& msg, bool first) const;
  // What follows a finished reply before the next user turn, after the
  // end-of-generation token the model produced (which the caller appends as
  // generated): e.g. "\n" for chatml.
  std::string after_reply() const;

 private:
  ChatFormat format_;
};

}  // namespace loom::llm
