import {
  ChunkedScanner,
  clientResponseHead,
  endToEnd,
  headerValue,
  parseHead,
  requestFraming,
  requestHeadFraming,
  responseFraming,
  responseHeadFraming,
  scanRequestHead,
  scanResponseHead,
  serializeHead,
  upstreamRequestHead,
} from "./http-message.js";

const head = (text: string) => {
  const parsed = parseHead(Buffer.from(text, "latin1"));
  if (!parsed) throw new Error("unparsed");
  return parsed;
};

describe("HTTP message heads", () => {
  it("parses a request head and refuses folded or nameless header lines", () => {
    expect(head("GET http://a/ HTTP/1.1\r\nHost: a\r\nX-A:  b ")).toEqual({ startLine: ["GET", "http://a/", "HTTP/1.1"], headers: [["Host", "a"], ["X-A", "b"]] });
    expect(parseHead(Buffer.from("GET http://a/ HTTP/1.1\r\nX-A: b\r\n folded"))).toBeUndefined();
    expect(parseHead(Buffer.from("GET http://a/ HTTP/1.1\r\n: nameless"))).toBeUndefined();
  });

  it("frames request bodies and refuses ambiguous framing", () => {
    expect(requestFraming(head("GET x HTTP/1.1"))).toEqual({ kind: "none" });
    expect(requestFraming(head("POST x HTTP/1.1\r\nContent-Length: 12"))).toEqual({ kind: "length", bytes: 12 });
    expect(requestFraming(head("POST x HTTP/1.1\r\nTransfer-Encoding: chunked"))).toEqual({ kind: "chunked" });
    expect(requestFraming(head("POST x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3"))).toBeUndefined();
    expect(requestFraming(head("POST x HTTP/1.1\r\nTransfer-Encoding: gzip"))).toBeUndefined();
    expect(requestFraming(head("POST x HTTP/1.1\r\nContent-Length: -1"))).toBeUndefined();
    // Repeated framing headers are refused, even when equal: every copy would be forwarded.
    expect(requestFraming(head("POST x HTTP/1.1\r\nContent-Length: 3\r\ncontent-length: 30"))).toBeUndefined();
    expect(requestFraming(head("POST x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3"))).toBeUndefined();
    expect(requestFraming(head("POST x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity"))).toBeUndefined();
  });

  it("frames responses: none for HEAD, 204 and 304, else by header or until close", () => {
    expect(responseFraming(head("HTTP/1.1 200 OK\r\nContent-Length: 5"), "HEAD")).toEqual({ kind: "none" });
    expect(responseFraming(head("HTTP/1.1 204 No Content"), "GET")).toEqual({ kind: "none" });
    expect(responseFraming(head("HTTP/1.1 304 Not Modified\r\nContent-Length: 5"), "GET")).toEqual({ kind: "none" });
    expect(responseFraming(head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"), "GET")).toEqual({ kind: "chunked" });
    expect(responseFraming(head("HTTP/1.1 200 OK"), "GET")).toEqual({ kind: "until-close" });
    expect(responseFraming(head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6"), "GET")).toBeUndefined();
  });

  it("drops hop-by-hop headers and those Connection names, keeps Transfer-Encoding with its body", () => {
    const kept = endToEnd(head("GET x HTTP/1.1\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nProxy-Authorization: Basic a\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nUpgrade: h2c\r\nTransfer-Encoding: chunked\r\nAccept: */*"));
    expect(kept).toEqual([["Transfer-Encoding", "chunked"], ["Accept", "*/*"]]);
  });
});

describe("response heads passed on as byte ranges", () => {
  const scan = (text: string) => scanResponseHead(Buffer.from(text, "latin1"));
  const client = (text: string, close: boolean) => {
    const scanned = scan(text);
    if (!scanned) throw new Error("unscanned");
    return clientResponseHead(scanned, close).toString("latin1");
  };

  it("copies the upstream's lines without the hop-by-hop ones, framing kept", () => {
    const text = "HTTP/1.1 200 OK\r\nServer: nginx\r\nConnection: keep-alive\r\nContent-Length: 5\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\nTransfer-Encoding: chunked\r\nETag: \"x\"\r\nUpgrade: h2c";
    expect(scan(text)?.parsed).toBeUndefined();
    expect(client(text, false)).toBe('HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nETag: "x"\r\n\r\n');
    expect(client(text, true)).toBe('HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nETag: "x"\r\nConnection: close\r\n\r\n');
    expect(client("HTTP/1.1 204 No Content", false)).toBe("HTTP/1.1 204 No Content\r\n\r\n");
    expect(scan("HTTP/1.1 200 OK\r\nConnection: close")?.connection).toBe("close");
  });

  it("refuses repeated framing headers and folded or nameless lines as before", () => {
    expect(responseHeadFraming(scan("HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 5") ?? fail(), "GET")).toBeUndefined();
    expect(responseHeadFraming(scan("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked") ?? fail(), "GET")).toBeUndefined();
    expect(responseHeadFraming(scan("HTTP/1.1 200 OK\r\nContent-Length:  5 \r\nContent-Length: 5") ?? fail(), "GET")).toBeUndefined();
    expect(responseHeadFraming(scan("HTTP/1.1 200 OK\r\nContent-Length: 5") ?? fail(), "GET")).toEqual({ kind: "length", bytes: 5 });
    expect(scan("HTTP/1.1 200 OK\r\nX-A: b\r\n folded")).toBeUndefined();
    expect(scan("HTTP/1.1 200 OK\r\nX-A: b\r\n\tfolded")).toBeUndefined();
    expect(scan("HTTP/1.1 200 OK\r\n: nameless")).toBeUndefined();
    expect(scan("HTTP/1.1 200 OK\r\nno colon")).toBeUndefined();
  });

  // The old path: a header list, endToEnd and serializeHead. Every head must come out byte for byte the same.
  const heads = [
    "HTTP/1.1 200 OK\r\nServer: nginx\r\nConnection: keep-alive\r\nContent-Length: 5",
    "HTTP/1.1 200 OK\r\nX-A:b\r\nX-B:   c  \r\nX-C:\r\nX-D: \r\nConnection:keep-alive",
    "HTTP/1.1 200 OK\r\nX-A : b\r\nX-B: c\t\r\nX-C: \u00a0d",
    "HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: close",
    "HTTP/1.1 200\r\nContent-Length: 2",
    "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\nConnection: keep-alive",
    "HTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nX-Secret: 1\r\nContent-Length: 0",
    "HTTP/1.1 200 OK\r\nConnection: transfer-encoding, keep-alive,\r\nTransfer-Encoding: chunked\r\nclose: x",
    "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nConnection: keep-alive",
    "HTTP/1.1 200 OK\r\nconnection: Keep-Alive\r\nCONNECTION: close\r\nTE: x\r\nTrailer: y\r\nProxy-Connection: z\r\nPragma: no-cache\r\nUser: u",
    "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=x\r\nContent-Length: 0",
    "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\nContent-Length: 6",
    "HTTP/1.1 200 OK  spaced reason \r\nA: b\r",
  ];

  it.each(heads)("matches the parsed path for %j", (text) => {
    const raw = Buffer.from(text, "latin1");
    const parsed = parseHead(raw);
    const scanned = scanResponseHead(raw);
    if (!parsed || !scanned) throw new Error("unparsed");
    expect([scanned.version, scanned.status, scanned.reason]).toEqual(parsed.startLine);
    expect(scanned.connection).toBe(headerValue(parsed, "connection"));
    for (const method of ["GET", "HEAD"]) expect(responseHeadFraming(scanned, method)).toEqual(responseFraming(parsed, method));
    for (const close of [false, true]) {
      const headers = endToEnd(parsed);
      if (close) headers.push(["Connection", "close"]);
      expect(clientResponseHead(scanned, close).toString("latin1")).toBe(serializeHead(`HTTP/1.1 ${parsed.startLine[1]} ${parsed.startLine[2]}`, headers).toString("latin1"));
    }
  });
});

describe("request heads passed on as byte ranges", () => {
  const scan = (text: string) => scanRequestHead(Buffer.from(text, "latin1")) ?? fail();

  it("reads a canonical HTTP/1.1 head without a header list and drops the hop-by-hop lines", () => {
    const scanned = scan("GET http://a/x HTTP/1.1\r\nHost: a\r\nProxy-Authorization: Basic dTpw\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*");
    expect(scanned.parsed).toBeUndefined();
    expect([scanned.method, scanned.target, scanned.version, scanned.proxyAuthorization, scanned.connection]).toEqual(["GET", "http://a/x", "HTTP/1.1", "Basic dTpw", "keep-alive"]);
    expect(upstreamRequestHead(scanned, undefined, "Basic b3du").toString("latin1")).toBe("GET http://a/x HTTP/1.1\r\nHost: a\r\nAccept: */*\r\nProxy-Authorization: Basic b3du\r\n\r\n");
    // HTTP/1.0, Expect, odd whitespace and Connection naming other fields take the parsed path.
    for (const text of ["GET http://a/ HTTP/1.0", "PUT http://a/ HTTP/1.1\r\nExpect: 100-continue", "GET http://a/ HTTP/1.1\r\nX-A:  b", "GET http://a/ HTTP/1.1\r\nConnection: X-A", "GET  http://a/ HTTP/1.1"]) expect(scan(text).parsed).toBeDefined();
  });

  it("refuses what parseHead refuses", () => {
    for (const text of ["GET http://a/ HTTP/1.1\r\nX-A: b\r\n folded", "GET http://a/ HTTP/1.1\r\n: nameless", "GET http://a/ HTTP/1.1\r\nno colon", "GETONLY"]) expect(scanRequestHead(Buffer.from(text, "latin1"))).toBeUndefined();
  });

  // The old path: a header list, endToEnd, Host when missing, the upstream's credentials, serializeHead.
  const heads = [
    "GET http://a/x HTTP/1.1\r\nHost: a\r\nUser-Agent: curl/8\r\nAccept: */*",
    "GET http://a/x HTTP/1.1\r\nUser-Agent: c",
    "GET http://a/ HTTP/1.1",
    "POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\nConnection: transfer-encoding, keep-alive,",
    "POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\ncontent-length: 3",
    "GET http://a/ HTTP/1.1\r\nconnection: Keep-Alive\r\nCONNECTION: close\r\nTE: x\r\nTrailer: y\r\nUpgrade: z\r\nKeep-Alive: 5\r\nPragma: no-cache",
    "GET http://a/ HTTP/1.1\r\nProxy-Authorization: Basic a\r\nproxy-authorization: Basic b\r\nhost: h",
    "GET http://a/ HTTP/1.1\r\nX-A:b\r\nX-B:   c  \r\nX-C:\r\nX-D: ",
    "GET http://a/ HTTP/1.1\r\nConnection: X-Secret, close\r\nX-Secret: 1\r\nclose: 2",
    "GET http://a/ HTTP/1.1\r\nExpect: 100-continue\r\nHost: a",
    "GET http://a/ HTTP/1.0\r\nConnection: keep-alive",
    "GET http://a/ HTTP/1.1\r\nX-A: \u00a0b",
  ];

  it.each(heads)("matches the parsed path for %j", (text) => {
    const raw = Buffer.from(text, "latin1");
    const parsed = parseHead(raw) ?? fail();
    const scanned = scanRequestHead(raw) ?? fail();
    expect([scanned.method, scanned.target, scanned.version]).toEqual(parsed.startLine);
    expect(scanned.connection).toBe(headerValue(parsed, "connection"));
    expect(scanned.proxyAuthorization).toBe(headerValue(parsed, "proxy-authorization"));
    expect(scanned.hasHost).toBe(headerValue(parsed, "host") !== undefined);
    expect(requestHeadFraming(scanned)).toEqual(requestFraming(parsed));
    if (scanned.parsed || headerValue(parsed, "expect") !== undefined) return;
    for (const host of [undefined, "a:8080"])
      for (const auth of [undefined, "Basic b3du"]) {
        const headers = endToEnd(parsed);
        if (host !== undefined) headers.push(["Host", host]);
        if (auth !== undefined) headers.push(["Proxy-Authorization", auth]);
        expect(upstreamRequestHead(scanned, host, auth).toString("latin1")).toBe(serializeHead(`${parsed.startLine[0]} ${parsed.startLine[1]} HTTP/1.1`, headers).toString("latin1"));
      }
  });

  it("takes the byte-range path for most heads of the list above", () => {
    expect(heads.filter((text) => scan(text).parsed === undefined).length).toBeGreaterThanOrEqual(7);
  });
});

function fail(): never {
  throw new Error("unscanned");
}

describe("ChunkedScanner", () => {
  const body = "4\r\nWiki\r\n5;name=v\r\npedia\r\n0\r\nTrailer: x\r\n\r\n";

  it("finds the end of a chunked body split anywhere, and leaves what follows", () => {
    const bytes = Buffer.from(`${body}GET next`, "latin1");
    for (let split = 1; split < body.length; split++) {
      const scanner = new ChunkedScanner();
      const first = scanner.scan(bytes.subarray(0, split));
      expect(first).toBe(split);
      expect(scanner.done).toBe(false);
      expect(split + scanner.scan(bytes.subarray(split))).toBe(body.length);
      expect(scanner.done).toBe(true);
    }
  });

  it("refuses a bad size line", () => {
    expect(() => new ChunkedScanner().scan(Buffer.from("zz\r\n"))).toThrow(/bad chunk size/);
  });
});
