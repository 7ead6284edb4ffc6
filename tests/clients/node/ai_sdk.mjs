// The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against the proxy: for each model in
// MODELS, each scenario sends its requests with the header x-scenario: "<model>/<scenario>", so
// the Python side can pick its exchanges out of the proxy's tap. Prints one JSON object:
// {"<model>/<scenario>": {"ok": true, "text": ...} | {"ok": false, "error": "<error name>"}}.
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";

const provider = createOpenAICompatible({
  name: "guard",
  baseURL: process.env.PROXY_V1,
  apiKey: "sk-node-client",
});
const tools = {
  read_file: tool({
    description: "Read a file of the project.",
    inputSchema: jsonSchema({ type: "object", properties: { path: { type: "string" } } }),
    execute: async ({ path }) => `<${path ?? "README.md"}>`,
  }),
};
const SYSTEM = "You are a coding agent.";
const SIGNATURE = "c2lnbmF0dXJlLW9mLXRoZS1zdGVw";

// An assistant message with two parallel calls, as the SDK keeps a provider's answer: the
// reasoning part for DeepSeek's thinking model, Gemini 3's signature on the first call.
function parallelCalls(model) {
  const content = [];
  if (model === "deepseek-reasoner") content.push({ type: "reasoning", text: "Read both files." });
  for (const [id, path] of [["call_a1", "config.py"], ["call_b2", "app.py"]]) {
    const part = { type: "tool-call", toolCallId: id, toolName: "read_file", input: { path } };
    if (model.startsWith("gemini-3") && id === "call_a1") {
      part.providerOptions = { google: { thoughtSignature: SIGNATURE } };
    }
    content.push(part);
  }
  return { role: "assistant", content };
}

function results(...ids) {
  const content = ids.map((id) => ({
    type: "tool-result", toolCallId: id, toolName: "read_file",
    output: { type: "text", value: `<${id}>` },
  }));
  return { role: "tool", content };
}

const user = (text) => ({ role: "user", content: text });

const SCENARIOS = {
  // The SDK's own tool loop: call, run the tool, answer.
  loop: (model, headers) => generateText({
    model: provider(model), system: SYSTEM, prompt: "Read config.py.", tools, headers,
    stopWhen: stepCountIs(3), maxRetries: 0,
  }),
  // The same loop streamed: the SDK accumulates the streamed call itself.
  stream: async (model, headers) => {
    const result = streamText({
      model: provider(model), system: SYSTEM, prompt: "Read config.py.", tools, headers,
      stopWhen: stepCountIs(3), maxRetries: 0, onError: () => {},
    });
    return { text: await result.text };
  },
  parallel: (model, headers) => generateText({
    model: provider(model), system: SYSTEM, tools, headers, maxRetries: 0,
    messages: [user("Read both."), parallelCalls(model), results("call_a1", "call_b2")],
  }),
  // The saved assistant message kept its text, not its calls.
  lost: (model, headers) => generateText({
    model: provider(model), system: SYSTEM, tools, headers, maxRetries: 0, toolChoice: "none",
    messages: [user("Read both."), { role: "assistant", content: "Reading." },
      results("call_a1", "call_b2"), user("Go on.")],
  }),
  // Context compression cut the history between the calls and their results.
  trimmed: (model, headers) => generateText({
    model: provider(model), system: SYSTEM, tools, headers, maxRetries: 0, toolChoice: "none",
    messages: [results("call_a1", "call_b2"), user("Sum up.")],
  }),
  // One of two calls has its result.
  missing: (model, headers) => generateText({
    model: provider(model), system: SYSTEM, tools, headers, maxRetries: 0, toolChoice: "none",
    messages: [user("Read both."), parallelCalls(model), results("call_a1"), user("Go on.")],
  }),
};

const out = {};
for (const model of process.env.MODELS.split(",")) {
  for (const [name, run] of Object.entries(SCENARIOS)) {
    const key = `${model}/${name}`;
    try {
      const result = await run(model, { "x-scenario": key });
      out[key] = { ok: true, text: result.text };
    } catch (error) {
      out[key] = { ok: false, error: error.name ?? String(error), message: String(error.message) };
    }
  }
}
console.log(JSON.stringify(out));
