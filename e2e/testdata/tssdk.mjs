// Drives wink-mcp with the official TypeScript SDK's client over stdio:
// node tssdk.mjs SDK_DIR BINARY ARGS... It lists the tools (so that the
// client checks every result against its tool's output schema), pages
// through big.txt with read_file and through the matches of "needle" with
// grep, reads the end of big.txt, tries a bad cursor, and prints what it
// got as one JSON object. Any exception fails the run.
import { pathToFileURL } from "node:url";

const [sdk, command, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(`${sdk}/dist/esm/${p}`).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const client = new Client({ name: "wink-e2e-ts", version: "1" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
const { tools } = await client.listTools();
const out = { schemas: tools.filter((t) => ["read_file", "grep"].includes(t.name) && t.outputSchema).map((t) => t.name) };

async function call(name, a) {
	const r = await client.callTool({ name, arguments: a });
	if (r.isError) throw new Error(`${name} ${JSON.stringify(a)}: ${r.content[0].text}`);
	return r.structuredContent;
}

const lines = [];
out.readPages = 0;
for (let offset = 0; ; ) {
	const s = await call("read_file", { file_path: "big.txt", offset });
	lines.push(...s.lines);
	out.readPages++;
	if (!s.truncated) break;
	offset = s.next_offset;
}
out.file = lines.join("\n") + "\n";
out.tail = (await call("read_file", { file_path: "big.txt", offset: -3 })).lines;

out.matches = [];
out.grepPages = 0;
for (let cursor; ; ) {
	const s = await call("grep", cursor ? { pattern: "needle", cursor } : { pattern: "needle" });
	out.matches.push(...s.matches.map((m) => `${m.path}:${m.line}: ${m.text}`));
	out.grepPages++;
	if (!s.truncated) break;
	cursor = s.next_cursor;
}

const bad = await client.callTool({ name: "grep", arguments: { pattern: "needle", cursor: "not-a-cursor" } });
out.badCursor = bad.isError ? bad.content[0].text : "accepted";

await client.close();
process.stdout.write(JSON.stringify(out));
