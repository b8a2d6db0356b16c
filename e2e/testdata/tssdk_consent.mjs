// Drives wink-mcp's consent stage with the official TypeScript SDK's
// client over stdio: node tssdk_consent.mjs SDK_DIR BINARY ARGS... The
// client declares elicitation and answers each question with the next of
// decline, cancel and accept; it calls rm on a.txt once for each and prints
// the questions and the results as one JSON object. Any exception fails
// the run.
import { pathToFileURL } from "node:url";

const [sdk, command, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(`${sdk}/dist/esm/${p}`).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { ElicitRequestSchema } = await load("types.js");

const client = new Client({ name: "wink-e2e-ts", version: "1" }, { capabilities: { elicitation: {} } });
const out = { asked: [], results: [] };
let action;
client.setRequestHandler(ElicitRequestSchema, async (req) => {
	out.asked.push(req.params.message);
	return action === "accept" ? { action, content: { remember: false } } : { action };
});
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));

for (action of ["decline", "cancel", "accept"]) {
	const r = await client.callTool({ name: "rm", arguments: { path: "a.txt" } });
	out.results.push({ isError: !!r.isError, text: r.content[0].text });
}

await client.close();
process.stdout.write(JSON.stringify(out));
