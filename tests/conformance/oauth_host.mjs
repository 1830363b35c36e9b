// An MCP host written with the official TypeScript SDK that connects to a gateway URL alone and runs the
// MCP authorization flow (tests/oauth/test_typescript_host.py). The test is the user: it reads the
// authorization URL this prints, answers it in Chromium, and writes back the URL the registry sent the
// browser to. Then: tools listed and `add` called; on "again", a new session after the access token
// expired (the SDK refreshes it on its own).
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const serverUrl = new URL(process.argv[2]);
const redirectUrl = "http://127.0.0.1:33418/callback";
const stored = { tokens: undefined, client: undefined, verifier: undefined };
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: "TypeScript Host",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  state: () => "typescript-state",
  clientInformation: () => stored.client,
  saveClientInformation: (info) => { stored.client = info; },
  tokens: () => stored.tokens,
  saveTokens: (tokens) => { stored.tokens = tokens; },
  redirectToAuthorization: (url) => say({ authorize: url.toString() }),
  saveCodeVerifier: (verifier) => { stored.verifier = verifier; },
  codeVerifier: () => stored.verifier,
};

const input = readline.createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();
const nextLine = async () => (await lines.next()).value;
function say(message) { process.stdout.write(JSON.stringify(message) + "\n"); }

async function connect() {
  const client = new Client({ name: "typescript-host", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const callback = new URL(await nextLine());
  if (!callback.searchParams.get("code")) throw new Error(`authorization refused: ${callback}`);
  await transport.finishAuth(callback.searchParams.get("code"));
  const client2 = new Client({ name: "typescript-host", version: "1.0.0" });
  await client2.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
  return client2;
}

async function work() {
  const client = await connect();
  const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
  const added = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  await client.close();
  return { tools, added: added.content[0].text, access: stored.tokens.access_token };
}

try {
  say(await work());
  await nextLine(); // "again": the access token has expired meanwhile
  say(await work());
  process.exit(0);
} catch (error) {
  say({ error: String(error && error.stack || error) });
  process.exit(1);
}
