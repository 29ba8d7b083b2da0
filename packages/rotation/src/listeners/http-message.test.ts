import { ChunkedScanner, endToEnd, parseHead, requestFraming, responseFraming } from "./http-message.js";

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
