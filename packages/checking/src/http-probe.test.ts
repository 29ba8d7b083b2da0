import { parseAnswer } from "./http-probe.js";

const answer = (text: string) => parseAnswer(Buffer.from(text, "latin1"), 64 * 1024, performance.now());

describe("the http probe's answer reader", () => {
  it("reads the status and a body by Content-Length, ignoring what follows", () => {
    expect(answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, extra")).toMatchObject({ status: 200, body: Buffer.from("hello") });
  });

  it("reads a chunked body, also cut short", () => {
    expect(answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")?.body.toString()).toBe("hello world");
    expect(answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n wo")?.body.toString()).toBe("hello wo");
  });

  it("reads a body to the close without a length, and caps it", () => {
    expect(answer("HTTP/1.0 404 Not Found\r\n\r\nnope")).toMatchObject({ status: 404, body: Buffer.from("nope") });
    expect(parseAnswer(Buffer.from(`HTTP/1.1 200 OK\r\n\r\n${"x".repeat(100)}`), 10, 0)?.body.length).toBe(10);
  });

  it.each([["no head end", "HTTP/1.1 200 OK\r\n"], ["not HTTP", "SSH-2.0-OpenSSH\r\n\r\n"], ["HTTP/2 status line", "HTTP/2 200\r\n\r\n"], ["empty", ""]])("is null for %s", (_what, text) => {
    expect(answer(text)).toBeNull();
  });
});
