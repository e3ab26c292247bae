//! A small loopback HTTP/1.1 origin for tests (hyper on its own thread and
//! runtime): each request arrives, body read, as an [`Exchange`] on
//! [`Origin::requests`], and is answered with [`Exchange::respond`]. The
//! server stops when the [`Origin`] is dropped.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll};

/// One request and the way to answer it.
pub struct Exchange {
    pub method: String,
    /// Path and query, as sent.
    pub url: String,
    /// Header names lowercase, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    reply: tokio::sync::oneshot::Sender<Reply>,
}

impl Exchange {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Sends the answer (an exchange dropped unanswered gets a 500).
    pub fn respond(self, r: Reply) {
        let _ = self.reply.send(r);
    }
}

/// An answer.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Send the body chunked (no Content-Length).
    pub chunked: bool,
}

impl Reply {
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.into(),
            chunked: false,
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.to_owned(), v.to_owned()));
        self
    }

    pub fn chunked(mut self) -> Reply {
        self.chunked = true;
        self
    }
}

/// A one-frame body whose length is known (Content-Length) or not
/// (chunked).
struct OneFrame {
    data: Option<Bytes>,
    sized: bool,
}

impl Body for OneFrame {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.get_mut().data.take().map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.sized && self.data.as_ref().is_none_or(Bytes::is_empty)
    }

    fn size_hint(&self) -> SizeHint {
        if self.sized {
            SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
        } else {
            SizeHint::default()
        }
    }
}

/// A running origin on 127.0.0.1.
pub struct Origin {
    pub addr: SocketAddr,
    rx: Option<mpsc::Receiver<Exchange>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Origin {
    /// Binds an ephemeral loopback port and starts serving.
    pub fn start() -> Origin {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind origin");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = mpsc::channel::<Exchange>();
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    let stream = tokio::select! {
                        _ = &mut stop_rx => return,
                        r = listener.accept() => match r {
                            Ok((s, _)) => s,
                            Err(_) => continue,
                        },
                    };
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let svc = hyper::service::service_fn(move |req| serve(tx.clone(), req));
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                            .await;
                    });
                }
            });
        });
        Origin {
            addr,
            rx: Some(rx),
            stop: Some(stop_tx),
        }
    }

    /// The requests, in arrival order; ends when the origin stops. Taken
    /// once (by the thread that answers them).
    pub fn requests(&mut self) -> mpsc::IntoIter<Exchange> {
        self.rx.take().expect("requests already taken").into_iter()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Keeps serving until the test process ends.
    pub fn leak(mut self) {
        if let Some(s) = self.stop.take() {
            std::mem::forget(s);
        }
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

async fn serve(
    tx: mpsc::Sender<Exchange>,
    req: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<OneFrame>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let (reply_tx, reply_rx) = tokio::sync::oneshot::channel();
    let ex = Exchange {
        method: parts.method.as_str().to_owned(),
        url: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.to_string(), |p| p.as_str().to_owned()),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
        reply: reply_tx,
    };
    let r = if tx.send(ex).is_ok() {
        reply_rx.await.unwrap_or_else(|_| Reply::new(500, ""))
    } else {
        Reply::new(503, "")
    };
    let mut b = http::Response::builder().status(r.status);
    for (k, v) in &r.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    Ok(b.body(OneFrame {
        data: Some(Bytes::from(r.body)),
        sized: !r.chunked,
    })
    .expect("response"))
}
