//! Tokio's server for the HTTP shape of bench/shapes.sh: the same minimal
//! HTTP/1.1 keep-alive responder as blitz_server.c's http mode (each
//! request up to its blank line gets one fixed 200 response; pipelined
//! requests their responses in one write), on Tokio's default
//! multi-thread runtime (`#[tokio::main]`'s: a worker per CPU), as a Tokio
//! user writes it. Prints `PORT <n>` (127.0.0.1, any free port), serves
//! until stdin closes.
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, world!";
const MAX_BATCH: usize = 32;

async fn serve(mut s: TcpStream, responses: &'static [u8]) {
    let mut buf = vec![0u8; 4096];
    let mut matched = 0usize;
    loop {
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut due = 0usize;
        for &b in &buf[..n] {
            if b == b"\r\n\r\n"[matched] {
                matched += 1;
            } else {
                matched = if b == b'\r' { 1 } else { 0 };
            }
            if matched == 4 {
                due += 1;
                matched = 0;
            }
        }
        while due > 0 {
            let k = due.min(MAX_BATCH);
            if s.write_all(&responses[..k * RESPONSE.len()]).await.is_err() {
                return;
            }
            due -= k;
        }
    }
}

fn main() {
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        std::process::exit(0);
    });
    let responses: &'static [u8] = Box::leak(RESPONSE.repeat(MAX_BATCH).into_boxed_slice());
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        println!("PORT {}", listener.local_addr().unwrap().port());
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        loop {
            if let Ok((s, _)) = listener.accept().await {
                let _ = s.set_nodelay(true);
                tokio::spawn(serve(s, responses));
            }
        }
    });
}
