// Drives `agent-task serve`'s workspace MCP endpoint with an official MCP
// TypeScript SDK client, unchanged: @modelcontextprotocol/sdk 1.x (the
// 2025-11-25 era only) or @modelcontextprotocol/client 2.x (both eras),
// pinned in package-lock.json, through its StreamableHTTPClientTransport
// with the bearer header.
//
// Usage: NODE_PATH=<node_modules> node agent_loop.cjs CONFIG_JSON
// CONFIG_JSON is the file tests/interop/python/agent_loop.py documents
// (url, token, change_id, task_id, collect, descriptor, mode, expect),
// plus `sdk`: "sdk1" (default) or "client2"; `mode` is the 2.x client's
// version negotiation ("legacy", "auto" or a revision to pin). The loop and
// the checks are the same as the Python client's; on success one JSON
// summary line goes to stdout (exit 0), on the first failed check the
// reason goes to stderr (exit 1).
'use strict';

const fs = require('node:fs');
const { spawnSync } = require('node:child_process');

// The SDK the config names: 1.x or 2.x (whose protocol error class is
// ProtocolError; the loop only reads its `code`).
function sdk(cfg) {
  if (cfg.sdk === 'client2') {
    const c = require('@modelcontextprotocol/client');
    return { Client: c.Client, StreamableHTTPClientTransport: c.StreamableHTTPClientTransport, McpError: c.ProtocolError };
  }
  return {
    Client: require('@modelcontextprotocol/sdk/client/index.js').Client,
    StreamableHTTPClientTransport: require('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport,
    McpError: require('@modelcontextprotocol/sdk/types.js').McpError,
  };
}

class CheckFailed extends Error {}

function check(cond, what) {
  if (!cond) throw new CheckFailed(what);
}

function deepEqual(a, b) {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  }
  return v;
}

function structured(result, name) {
  check(result.isError !== true, `${name}: unexpected isError: ${JSON.stringify(result)}`);
  check(result.structuredContent !== undefined, `${name}: no structuredContent`);
  check(result.content.length >= 1 && result.content[0].type === 'text', `${name}: no text content`);
  check(deepEqual(JSON.parse(result.content[0].text), result.structuredContent), `${name}: the text copy differs`);
  return result.structuredContent;
}

async function run(cfg) {
  const summary = {};
  const trace = [];
  summary.trace = trace;
  // The wire trace: HTTP method, MCP-Protocol-Version header, JSON-RPC
  // method and the HTTP status answered.
  const tracingFetch = async (url, init) => {
    const response = await fetch(url, init);
    const headers = new Headers(init && init.headers);
    let rpc = null;
    try {
      rpc = init && typeof init.body === 'string' ? JSON.parse(init.body).method ?? null : null;
    } catch (_) {
      rpc = null;
    }
    trace.push({
      http: (init && init.method) || 'GET',
      version_header: headers.get('mcp-protocol-version'),
      rpc,
      status: response.status,
    });
    return response;
  };
  const { Client, StreamableHTTPClientTransport, McpError } = sdk(cfg);
  const transport = new StreamableHTTPClientTransport(new URL(cfg.url), {
    requestInit: { headers: { Authorization: `Bearer ${cfg.token}` } },
    fetch: tracingFetch,
  });
  const mode = cfg.mode === undefined || cfg.mode === 'legacy' || cfg.mode === 'auto' ? cfg.mode : { pin: cfg.mode };
  const options = cfg.sdk === 'client2' && mode !== undefined ? { versionNegotiation: { mode } } : undefined;
  const client = new Client({ name: 'agent-task-interop', version: '1' }, options);
  await client.connect(transport);
  try {
    const version =
      typeof client.getNegotiatedProtocolVersion === 'function' ? client.getNegotiatedProtocolVersion() : transport.protocolVersion;
    summary.protocol_version = version;
    const expect = cfg.expect || '2025-11-25';
    check(version === expect, `negotiated ${version}, expected ${expect}`);
    check(client.getServerVersion().name === 'agent-task', 'server info');
    check(client.getServerCapabilities().tools !== undefined, 'no tools capability');

    const listed = await client.listTools();
    const names = listed.tools.map((t) => t.name);
    for (const t of listed.tools) {
      check(t.inputSchema.type === 'object', `${t.name}: inputSchema is not an object schema`);
      check(typeof t.inputSchema.properties === 'object', `${t.name}: no properties`);
    }
    summary.tools = names;

    const caps = structured(await client.callTool({ name: 'capabilities', arguments: {} }), 'capabilities');
    check(deepEqual(caps.operations, names), `tools ${names} != operations ${caps.operations}`);
    summary.capability = caps.capability;

    const change = { change_id: cfg.change_id };
    const nxt = structured(await client.callTool({ name: 'next', arguments: change }), 'next');
    check(deepEqual(nxt.next, { operation: 'collector_claim', task_id: cfg.task_id }), `next: ${JSON.stringify(nxt.next)}`);
    const ins = structured(await client.callTool({ name: 'instructions', arguments: { task_id: cfg.task_id } }), 'instructions');
    check(ins.entrypoint !== undefined, 'instructions without an entrypoint');
    let q = structured(await client.callTool({ name: 'qualification', arguments: change }), 'qualification');
    check(q.qualified === false, 'qualified before any work');

    const claim = structured(
      await client.callTool({ name: 'collector_claim', arguments: { task_id: cfg.task_id, request_id: 'sdk-claim' } }),
      'collector_claim',
    );
    const again = structured(
      await client.callTool({ name: 'collector_descriptor', arguments: { attempt_id: claim.attempt.attempt_id } }),
      'collector_descriptor',
    );
    check(deepEqual(again.descriptor, claim.descriptor), 'the descriptor changed between reads');

    const bad = await client.callTool({
      name: 'collector_claim',
      arguments: { task_id: cfg.task_id, request_id: 'sdk-claim', unexpected: 1 },
    });
    check(bad.isError === true, `an invalid call did not come back as isError: ${JSON.stringify(bad)}`);
    check(bad.structuredContent && typeof bad.structuredContent.error === 'string', 'isError without an error object');
    summary.tool_error = bad.structuredContent.error;

    try {
      await client.callTool({ name: 'no_such_tool', arguments: {} });
      throw new CheckFailed('an unknown tool did not raise');
    } catch (e) {
      if (!(e instanceof McpError)) throw e;
      summary.unknown_tool_code = e.code;
    }

    fs.writeFileSync(cfg.descriptor, JSON.stringify(claim.descriptor));
    const out = spawnSync(cfg.collect[0], [...cfg.collect.slice(1), '--descriptor', cfg.descriptor], { encoding: 'utf8' });
    check(out.status === 0, `collect failed: ${out.stdout} ${out.stderr}`);
    const collected = JSON.parse(out.stdout);
    check(collected.outcome === 'passed', `collect outcome: ${out.stdout}`);

    q = structured(await client.callTool({ name: 'qualification', arguments: change }), 'qualification');
    check(deepEqual(q.next, { operation: 'collector_finalize' }), `next after collect: ${JSON.stringify(q.next)}`);
    const fin = structured(await client.callTool({ name: 'collector_finalize', arguments: change }), 'collector_finalize');
    q = structured(await client.callTool({ name: 'qualification', arguments: change }), 'qualification');
    check(q.qualified === true, `not qualified after finalize: ${JSON.stringify(q)}`);
    check(q.receipt_digest === fin.receipt_digest, 'qualification names another receipt');
    summary.qualified = true;
    summary.receipt_digest = q.receipt_digest;
  } finally {
    await client.close();
  }
  return summary;
}

run(JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))).then(
  (summary) => {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  },
  (e) => {
    process.stderr.write(e instanceof CheckFailed ? `check failed: ${e.message}\n` : `${e.stack || e}\n`);
    process.exit(1);
  },
);
