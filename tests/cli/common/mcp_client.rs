//! A small MCP client of the workspace endpoint. Moved from `mcp_client.rs`,
//! whose tests and others share it.

use crate::common::data_support::{Resp, raw};
use serde_json::{Value, json};

pub struct Client<'a> {
    pub addr: &'a str,
    pub token: String,
    pub next_id: u64,
    pub version: Option<String>,
}

impl Client<'_> {
    pub fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Resp {
        let body = body.to_string();
        let mut r = format!(
            "POST {MCP} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n",
            self.addr,
            self.token,
            body.len()
        );
        if let Some(v) = &self.version {
            r.push_str(&format!("MCP-Protocol-Version: {v}\r\n"));
        }
        for (k, v) in extra {
            r.push_str(&format!("{k}: {v}\r\n"));
        }
        r.push_str("\r\n");
        r.push_str(&body);
        raw(self.addr, r.as_bytes())
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let r = self.post(
            &json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}),
            &[],
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert!(
            r.header("content-type")
                .unwrap_or("")
                .starts_with("application/json")
        );
        assert!(r.header("mcp-session-id").is_none());
        let v = r.json();
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["id"], self.next_id);
        v
    }

    pub fn tool(&mut self, name: &str, args: Value) -> Value {
        let v = self.call("tools/call", json!({"name": name, "arguments": args}));
        let res = &v["result"];
        assert_eq!(res["isError"], false, "{v}");
        let text: Value = serde_json::from_str(res["content"][0]["text"].as_str().expect("text"))
            .expect("json text");
        assert_eq!(
            text, res["structuredContent"],
            "the text copy equals structuredContent"
        );
        res["structuredContent"].clone()
    }
}

pub const MCP: &str = "/v1/hub/workspace/mcp?repository=demo-basic&profile=default";
