// An agent's memory session against the data node's MCP endpoint
// (`/v1/node/mcp` on `agent-task serve`) through an official MCP
// TypeScript SDK client, unchanged: @modelcontextprotocol/sdk 1.x (the
// 2025-11-25 era) or @modelcontextprotocol/client 2.x (pinned to
// 2026-07-28), with the node bearer. It stores three notes with
// collect_text, finds two of them again by a word with query and reads one
// back; a path outside the file roots comes back as an isError result.
//
// Usage: NODE_PATH=<node_modules> node data_memory.cjs CONFIG_JSON
// CONFIG_JSON holds url, token, sdk ("sdk1" or "client2"), mode (the 2.x
// client's pin) and expect (the revision it must settle on). Prints one
// JSON summary line (exit 0) or the failed check on stderr (exit 1).
'use strict';

const fs = require('node:fs');

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

function load(cfg) {
  if (cfg.sdk === 'client2') {
    const c = require('@modelcontextprotocol/client');
    return { Client: c.Client, Transport: c.StreamableHTTPClientTransport };
  }
  return {
    Client: require('@modelcontextprotocol/sdk/client/index.js').Client,
    Transport: require('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport,
  };
}

const NOTES = [
  ['build', 'The nightly build of the osprey service fails when TZ is unset.'],
  ['review', 'Reviewers asked for the osprey retry budget to be halved.'],
  ['deploy', 'Deploys go out on Tuesdays after the standup.'],
];

async function run(cfg) {
  const { Client, Transport } = load(cfg);
  const transport = new Transport(new URL(cfg.url), {
    requestInit: { headers: { Authorization: `Bearer ${cfg.token}` } },
  });
  const options = cfg.sdk === 'client2' && cfg.mode ? { versionNegotiation: { mode: { pin: cfg.mode } } } : undefined;
  const client = new Client({ name: 'agent-task-memory', version: '1' }, options);
  await client.connect(transport);
  const summary = {};
  try {
    const version =
      typeof client.getNegotiatedProtocolVersion === 'function' ? client.getNegotiatedProtocolVersion() : transport.protocolVersion;
    summary.protocol_version = version;
    check(version === cfg.expect, `negotiated ${version}`);
    const ok = async (name, args) => {
      const r = await client.callTool({ name, arguments: args });
      check(r.isError !== true, `${name}: ${JSON.stringify(r)}`);
      return r.structuredContent;
    };
    const ids = [];
    for (const [key, text] of NOTES) {
      const r = await ok('collect_text', { collection_id: 'default', text, key });
      check(r.inserted === 1, `stored ${JSON.stringify(r)}`);
      ids.push(r.records[0].id);
    }
    const found = await ok('query', { text: 'osprey', limit: 10 });
    const hits = found.records.map((r) => r.record.id).sort();
    check(JSON.stringify(hits) === JSON.stringify(ids.slice(0, 2).sort()), `found ${hits}`);
    const one = await ok('read_record', { record_id: ids[2] });
    check(one.content.data === NOTES[2][1], 'read back');
    const bad = await client.callTool({ name: 'collect_file', arguments: { collection_id: 'default', path: '/etc/passwd' } });
    check(bad.isError === true && bad.structuredContent.error === 'invalid_file', `outside the roots: ${JSON.stringify(bad)}`);
    summary.stored = ids.length;
    summary.found_by_word = hits.length;
  } finally {
    await client.close();
  }
  return summary;
}

run(JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))).then(
  (summary) => process.stdout.write(`${JSON.stringify(summary)}\n`),
  (e) => {
    process.stderr.write(`${e.stack || e}\n`);
    process.exit(1);
  },
);
