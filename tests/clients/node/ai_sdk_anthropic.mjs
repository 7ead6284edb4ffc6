// The Vercel AI SDK's Anthropic provider (`ai` + `@ai-sdk/anthropic`) against the proxy's
// Messages API: for each model in MODELS, each scenario sends its requests with the header
// x-scenario: "<model>/<scenario>", so the Python side can pick its exchanges out of the proxy's
// tap. Prints one JSON object:
// {"<model>/<scenario>": {"ok": true, "text": ...} | {"ok": false, "error": "<message>"}}.
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";

globalThis.AI_SDK_LOG_WARNINGS = false; // its warnings go to stdout, where the results are
const provider = createAnthropic({ baseURL: `${process.env.PROXY_ROOT}/v1`, apiKey: "sk-offline" });
const ASK = 'Read config.py. [[tool_use read_file {"path": "config.py"}]]';
const SYSTEM = "You are a coding agent.";
const tools = {
  read_file: tool({
    description: "Read a file of the project.",
    inputSchema: jsonSchema({
      type: "object", properties: { path: { type: "string" } }, required: ["path"],
    }),
    execute: async ({ path }) => `${path}: x = 1`,
  }),
};

const SCENARIOS = {
  // The SDK's own tool loop: call, run the tool, answer.
  loop: (model, headers) => generateText({
    model: provider(model), system: SYSTEM, prompt: ASK, tools, headers,
    stopWhen: stepCountIs(3), maxRetries: 0,
  }),
  // The same loop streamed: the SDK accumulates the streamed call itself.
  stream: async (model, headers) => {
    const result = streamText({
      model: provider(model), system: SYSTEM, prompt: ASK, tools, headers,
      stopWhen: stepCountIs(3), maxRetries: 0, onError: () => {},
    });
    return { text: await result.text };
  },
};

const out = {};
for (const model of process.env.MODELS.split(",")) {
  for (const [name, run] of Object.entries(SCENARIOS)) {
    const key = `${model}/${name}`;
    try {
      const result = await run(model, { "x-scenario": key });
      out[key] = { ok: true, text: result.text };
    } catch (error) {
      out[key] = { ok: false, error: String(error?.message ?? error) };
    }
  }
}
console.log(JSON.stringify(out));
