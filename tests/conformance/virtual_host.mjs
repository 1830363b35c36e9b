// An MCP host written with the official TypeScript SDK, with a bearer token, at a virtual server of the
// gateway (tests/gateway/test_virtual_typescript.py): it lists and calls tools, gets a prompt, reads a
// resource of each of two members, and answers the members' elicitation and sampling requests. It prints
// what it saw as one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token] = process.argv.slice(2);
const text = (result) => result.content[0].text;

try {
  const client = new Client(
    { name: "typescript-virtual-host", version: "1.0.0" },
    { capabilities: { elicitation: {}, sampling: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => ({
    action: "accept",
    content: { text: `green, to '${request.params.message}'` },
  }));
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
    role: "assistant",
    content: { type: "text", text: request.params.messages[0].content.text.slice(0, 4) },
    model: "test-model",
  }));
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  const tools = (await client.listTools()).tools;
  const found = await client.callTool({ name: "find", arguments: { query: "retries" } });
  const prompt = await client.getPrompt({ name: "review", arguments: { code: "z = 3" } });
  const resources = (await client.listResources()).resources.map((resource) => resource.uri).sort();
  const desk = await client.readResource({ uri: "desk+file:///readme.md" });
  const library = await client.readResource({ uri: "library+file:///readme.md" });
  const asked = await client.callTool({ name: "ask_reader", arguments: { question: "Colour?" } });
  const summary = await client.callTool({ name: "summarize", arguments: { text: "A long story." } });
  await transport.terminateSession();
  await client.close();
  process.stdout.write(
    JSON.stringify({
      protocol: transport.protocolVersion,
      tools: tools.map((tool) => tool.name).sort(),
      findSchema: tools.find((tool) => tool.name === "find").inputSchema,
      found: text(found),
      prompt: prompt.messages[0].content.text,
      resources,
      desk: desk.contents[0].text,
      library: library.contents[0].text,
      asked: text(asked),
      summary: text(summary),
    }) + "\n",
  );
} catch (error) {
  process.stdout.write(JSON.stringify({ error: String(error && error.stack || error) }) + "\n");
  process.exitCode = 1;
}
