#include "llm/chat/chat_template.hpp"

namespace loom::llm {
namespace {

bool has(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

struct Named {
  ChatFormat format;
  const char* name;
};
constexpr Named kNames[] = {
    {ChatFormat::kPlain, "plain"},
    {ChatFormat::kChatml, "chatml"},
    {ChatFormat::kLlama3, "llama3"},
    {ChatFormat::kLlama2, "llama2"},
    {ChatFormat::kMistral, "mistral"},
    {ChatFormat::kPhi3, "phi3"},
    {ChatFormat::kGemma, "gemma"},
    {ChatFormat::kZephyr, "zephyr"},
    {ChatFormat::kPhi4, "phi4"},
    {ChatFormat::kDeepseek3, "deepseek3"},
    {ChatFormat::kMistralV7, "mistral-v7"},
    {ChatFormat::kMistralV7Spaced, "mistral-v7-spaced"},
    {ChatFormat::kGranite, "granite"},
    {ChatFormat::kExaone3, "exaone3"},
    {ChatFormat::kCommandR, "command-r"},
    {ChatFormat::kGlm4, "glm4"},
    {ChatFormat::kSeedOss, "seed-oss"},
};

}  // namespace

const char* chat_format_name(ChatFormat f) {
  for (const Named& n : kNames) {
    if (n.format == f) return n.name;
  }
  return "plain";
}

std::string chat_format_names() {
  std::string s;
  for (const Named& n : kNames) {
    if (n.format != ChatFormat::kPlain) s += (s.empty() ? "" : ", ") + std::string(n.name);
  }
  return s;
}

bool chat_format_from_name(std::string_view name, ChatFormat* out) {
  for (const Named& n : kNames) {
    if (name == n.name) {
      *out = n.format;
      return true;
    }
  }
  return false;
}

// Each layout is recognised by the markers only it writes; the order
// matters where templates share some (phi-3 and zephyr both write <|user|>;
// phi-4 writes chatml's <|im_start|> with its own <|im_sep|>).
ChatFormat detect_chat_format(std::string_view t) {
  if (t.empty()) return ChatFormat::kPlain;
  if (has(t, "<|start_of_role|>")) return ChatFormat::kGranite;
  if (has(t, "[gMASK]<sop>")) return ChatFormat::kGlm4;
  if (has(t, "<seed:bos>")) return ChatFormat::kSeedOss;  // (before zephyr: it writes <|user|> too)
  if (has(t, "[|system|]") && has(t, "[|endofturn|]")) return ChatFormat::kExaone3;
  if (has(t, "<|START_OF_TURN_TOKEN|>")) return ChatFormat::kCommandR;
  if (has(t, "<|im_sep|>")) return ChatFormat::kPhi4;
  if (has(t, "<|im_start|>")) return ChatFormat::kChatml;
  if (has(t, "<｜User｜>") && has(t, "<｜Assistant｜>")) {
    return ChatFormat::kDeepseek3;
  }
  if (has(t, "<|start_header_id|>")) return ChatFormat::kLlama3;
  if (has(t, "<start_of_turn>")) return ChatFormat::kGemma;
  if (has(t, "<|user|>") && has(t, "<|end|>")) return ChatFormat::kPhi3;
  if (has(t, "<|user|>")) return ChatFormat::kZephyr;
  if (has(t, "[SYSTEM_PROMPT]")) {
    // Whether the template writes a space after its markers (the Jinja text
    // is the truth; llama.cpp's v7 without --jinja always writes one).
    return has(t, "[SYSTEM_PROMPT] ") || has(t, "[INST] ") ? ChatFormat::kMistralV7Spaced : ChatFormat::kMistralV7;
  }
  if (has(t, "[INST]")) return has(t, "<<SYS>>") ? ChatFormat::kLlama2 : ChatFormat::kMistral;
  return ChatFormat::kPlain;
}

std::string ChatTemplate::user_turn(const std::string& sys, const std::string& msg, bool first) const {
  const bool with_sys = first && !sys.empty();
  switch (format_) {
    case ChatFormat::kChatml:
      return (with_sys ? "<|im_start|>system\n" + sys + "<|im_end|>\n" : std::string()) + "<|im_start|>user\n" + msg +
             "<|im_end|>\n<|im_start|>assistant\n";
    case ChatFormat::kLlama3:
      return (with_sys ? "<|start_header_id|>system<|end_header_id|>\n\n" + sys + "<|eot_id|>" : std::string()) +
             "<|start_header_id|>user<|end_header_id|>\n\n" + msg +
             "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
    case ChatFormat::kLlama2:
      // Later turns open with their own BOS: "<s>[INST] ...".
      return std::string(first ? "" : "<s>") + "[INST] " +
             (with_sys ? "<<SYS>>\n" + sys + "\n<</SYS>>\n\n" : std::string()) + msg + " [/INST]";
    case ChatFormat::kMistral:
      return "[INST] " + (with_sys ? sys + "\n\n" : std::string()) + msg + "[/INST]";
    case ChatFormat::kPhi3:
      return (with_sys ? "<|system|>\n" + sys + "<|end|>\n" : std::string()) + "<|user|>\n" + msg +
             "<|end|>\n<|assistant|>\n";
    case ChatFormat::kGemma:
      // Gemma has no system role: the system text opens the first user turn.
      return "<start_of_turn>user\n" + (with_sys ? sys + "\n\n" : std::string()) + msg +
             "<end_of_turn>\n<start_of_turn>model\n";
    case ChatFormat::kZephyr:
      return (with_sys ? "<|system|>\n" + sys + "</s>\n" : std::string()) + "<|user|>\n" + msg +
             "</s>\n<|assistant|>\n";
    case ChatFormat::kPhi4:
      return (with_sys ? "<|im_start|>system<|im_sep|>" + sys + "<|im_end|>" : std::string()) +
             "<|im_start|>user<|im_sep|>" + msg + "<|im_end|><|im_start|>assistant<|im_sep|>";
    case ChatFormat::kMistralV7:
    case ChatFormat::kMistralV7Spaced: {
      const std::string sp = format_ == ChatFormat::kMistralV7Spaced ? " " : "";
      return (with_sys ? "[SYSTEM_PROMPT]" + sp + sys + "[/SYSTEM_PROMPT]" : std::string()) + "[INST]" + sp + msg +
             "[/INST]";
    }
    case ChatFormat::kDeepseek3:
      // The system text as is, then the turns; a reply ends with the model's
      // <｜end▁of▁sentence｜>, which it generates.
      return (with_sys ? sys : std::string()) + "<｜User｜>" + msg +
             "<｜Assistant｜>";
    case ChatFormat::kGranite:
      // The reply ends with the model's <|end_of_text|>, then a newline (after_reply).
      return (with_sys ? "<|start_of_role|>system<|end_of_role|>" + sys + "<|end_of_text|>\n" : std::string()) +
             "<|start_of_role|>user<|end_of_role|>" + msg + "<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>";
    case ChatFormat::kExaone3:
      // The reply ends with the model's [|endofturn|], then a newline (after_reply).
      return (with_sys ? "[|system|]" + sys + "[|endofturn|]\n" : std::string()) + "[|user|]" + msg +
             "\n[|assistant|]";
    case ChatFormat::kCommandR:
      // The reply ends with the model's <|END_OF_TURN_TOKEN|>; nothing after it.
      return (with_sys ? "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>" + sys + "<|END_OF_TURN_TOKEN|>" : std::string()) +
             "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>" + msg +
             "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>";
    case ChatFormat::kGlm4:
      // The reply ends with the model's <|user|> (an end-of-generation token); the next turn writes its own.
      return (first ? "[gMASK]<sop>" : "") + (with_sys ? "<|system|>\n" + sys : std::string()) + "<|user|>\n" + msg +
             "<|assistant|>\n";
    case ChatFormat::kSeedOss:
      // The reply ends with the model's <seed:eos>; nothing after it.
      return (with_sys ? "<seed:bos>system\n" + sys + "<seed:eos>" : std::string()) + "<seed:bos>user\n" + msg +
             "<seed:eos><seed:bos>assistant\n";
    case ChatFormat::kPlain:
      break;
  }
  return (with_sys ? sys + "\n\n" : std::string()) + (first ? "" : "\n") + "User: " + msg + "\nAssistant:";
}

std::string ChatTemplate::after_reply() const {
  switch (format_) {
    case ChatFormat::kChatml:
    case ChatFormat::kPhi3:
    case ChatFormat::kGemma:
    case ChatFormat::kZephyr:
    case ChatFormat::kGranite:
    case ChatFormat::kExaone3:
      return "\n";
    default:
      return std::string();
  }
}

}  // namespace loom::llm
