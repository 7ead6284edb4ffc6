// The TypeScript SDK (`@anthropic-ai/sdk`) against the proxy's Messages API: for each model in
// MODELS, each scenario sends its requests with the header x-scenario: "<model>/<scenario>", so
// the Python side can pick its exchanges out of the proxy's tap. Prints one JSON object:
// {"<model>/<scenario>": {"ok": true, "text": ...} | {"ok": false, "error": "<message>"}}.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({
  baseURL: process.env.PROXY_ROOT,
  apiKey: "sk-offline",
  maxRetries: 0,
  timeout: 10000,
});
const SYSTEM = "You are a coding agent.";
const ASK = 'Read config.py. [[tool_use read_file {"path": "config.py"}]]';
const TOOLS = [{
  name: "read_file",
  description: "Read a file of the project.",
  input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
}];

// Two rounds: the SDK's answer content goes back as it came, then the tool's result.
async function loop(model, headers, streamed) {
  const messages = [{ role: "user", content: ASK }];
  let answer;
  for (let round = 0; round < 2; round += 1) {
    const params = { model, max_tokens: 1024, system: SYSTEM, tools: TOOLS, messages };
    answer = streamed
      ? await client.messages.stream(params, { headers }).finalMessage()
      : await client.messages.create(params, { headers });
    messages.push({ role: "assistant", content: answer.content });
    const use = answer.content.find((block) => block.type === "tool_use");
    if (!use) break;
    messages.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: use.id, content: "x = 1" }],
    });
  }
  return { text: answer.content.at(-1).text };
}

const SCENARIOS = {
  loop: (model, headers) => loop(model, headers, false),
  stream: (model, headers) => loop(model, headers, true),
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
