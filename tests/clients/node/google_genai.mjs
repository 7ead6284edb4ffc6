// Node's Gemini clients against the proxy's native Gemini API: the GenAI SDK (`@google/genai`,
// its Chat keeping the history) and the AI SDK's google provider (`@ai-sdk/google` with
// `createGoogleGenerativeAI({ baseURL })`), each a tool round trip over a parallel step (two
// calls), plain and streamed. For each model in MODELS, each scenario sends its requests with
// the header x-scenario: "<model>/<scenario>", so the Python side can pick its exchanges out of
// the proxy's tap. Prints one JSON object:
// {"<model>/<scenario>": {"ok": true, "text": ...} | {"ok": false, "error": "<message>"}}.
import { GoogleGenAI } from "@google/genai";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";

const ROOT = process.env.PROXY_ROOT;
const SYSTEM = "You are a coding agent.";
const ASK = 'Read config.py and app.py. [[tool_use read_file {"path": "config.py"}]] & [[tool_use read_file {"path": "app.py"}]]';
const PARAMETERS = {
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
};
const DESCRIPTION = "Read a file of the project.";

// The GenAI SDK's Chat: the model's content goes back as the SDK recorded it, then the
// tool's response (with the call's id when the call had one).
async function genai(model, headers, streamed) {
  const client = new GoogleGenAI({ apiKey: "offline", httpOptions: { baseUrl: ROOT, headers } });
  const chat = client.chats.create({
    model,
    config: {
      systemInstruction: SYSTEM,
      tools: [{ functionDeclarations: [{ name: "read_file", description: DESCRIPTION,
        parametersJsonSchema: PARAMETERS }] }],
    },
  });
  let message = ASK;
  for (let round = 0; round < 2; round += 1) {
    let text = "";
    const calls = [];
    if (streamed) {
      for await (const chunk of await chat.sendMessageStream({ message })) {
        text += chunk.text ?? "";
        calls.push(...(chunk.functionCalls ?? []));
      }
    } else {
      const answer = await chat.sendMessage({ message });
      text = answer.text ?? "";
      calls.push(...(answer.functionCalls ?? []));
    }
    if (calls.length === 0) return { text };
    message = calls.map((call) => ({
      functionResponse: { id: call.id, name: call.name, response: { output: "x = 1" } },
    }));
  }
  throw new Error("the loop did not finish");
}

// The AI SDK runs the tool itself and sends its result back (stopWhen: two steps).
async function aiSdk(model, headers, streamed) {
  const google = createGoogleGenerativeAI({ baseURL: `${ROOT}/v1beta`, apiKey: "offline", headers });
  const tools = {
    read_file: tool({
      description: DESCRIPTION,
      inputSchema: jsonSchema(PARAMETERS),
      execute: async () => "x = 1",
    }),
  };
  const params = {
    model: google(model), system: SYSTEM, prompt: ASK, tools, stopWhen: stepCountIs(3),
    maxRetries: 0,
  };
  if (streamed) {
    const result = streamText(params);
    return { text: await result.text };
  }
  const result = await generateText(params);
  return { text: result.text };
}

const SCENARIOS = {
  "genai": (model, headers) => genai(model, headers, false),
  "genai-stream": (model, headers) => genai(model, headers, true),
  "ai-sdk": (model, headers) => aiSdk(model, headers, false),
  "ai-sdk-stream": (model, headers) => aiSdk(model, headers, true),
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
