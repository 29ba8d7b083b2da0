import { extractProxyLines } from "./extract-proxies.js";

describe("extractProxyLines", () => {
  it("keeps every upload form of a text list as written, scheme and credentials included", () => {
    const body = [
      "# fresh list",
      "1.2.3.4:8080",
      "5.6.7.8:3128:alice:s3cr:et",
      "bob:pw@9.9.9.9:1080",
      "socks5://carol:pw@10.20.30.40:1080",
      "http://11.12.13.14:80",
      "not a proxy",
      "1.2.3.4:8080",
      "proxy 21.22.23.24:8000 (fast), also 31.32.33.34:9000",
      "999.1.1.1:80",
    ].join("\r\n");
    expect(extractProxyLines(body, "text/plain")).toEqual([
      "1.2.3.4:8080",
      "5.6.7.8:3128:alice:s3cr:et",
      "bob:pw@9.9.9.9:1080",
      "socks5://carol:pw@10.20.30.40:1080",
      "http://11.12.13.14:80",
      "21.22.23.24:8000",
      "31.32.33.34:9000",
    ]);
  });

  it("keeps a proxy once whichever way it was found, and `ip port` lines as written", () => {
    const body = ["1.2.3.4:8080", "proxy 1.2.3.4:8080 (fast)", "5.6.7.8 3128", "5.6.7.8 3128", "9.9.9.9:80:u:p", "9.9.9.9:80:u:q", "010.1.1.1:80", "10.1.1.1:80"].join("\n");
    expect(extractProxyLines(body, "text/plain")).toEqual(["1.2.3.4:8080", "5.6.7.8 3128", "9.9.9.9:80:u:p", "9.9.9.9:80:u:q", "010.1.1.1:80", "10.1.1.1:80"]);
    const html = "<table><tr><td>1.2.3.4</td><td>8080</td></tr></table><p>1.2.3.4:8080</p><p>fast: 1.2.3.4:8080</p>";
    expect(extractProxyLines(html, "text/html")).toEqual(["1.2.3.4:8080"]);
    const json = JSON.stringify([{ ip: "1.2.3.4", port: 8080 }, "1.2.3.4:8080", "see 1.2.3.4:8080"]);
    expect(extractProxyLines(json, "application/json")).toEqual(["1.2.3.4:8080"]);
  });

  it("keeps every proxy of a long list once, in first-seen order", () => {
    const proxies = Array.from({ length: 5000 }, (_, i) => `${1 + (i % 200)}.${i >> 8}.${i & 255}.1:${1000 + (i % 7)}`);
    const credentials = proxies.slice(0, 100).map((line) => `${line}:user:pw`);
    const body = [...proxies, ...credentials, ...proxies.slice().reverse(), ...credentials].join("\r\n");
    expect(extractProxyLines(body)).toEqual([...proxies, ...credentials]);
  });

  it("reads an HTML table's address cell and the port cell after it, and proxies in the page's text", () => {
    const html = `<!DOCTYPE html><html><body>
      <table><tr><th>IP</th><th>Port</th><th>Country</th></tr>
      <tr><td>1.2.3.4</td><td>8080</td><td>US</td></tr>
      <tr><td> 5.6.7.8 </td><td>3128</td><td>DE</td></tr>
      <tr><td>9.9.9.9</td><td>n/a</td></tr></table>
      <p>Also <b>11.12.13.14:80</b><i>21.22.23.24:81</i></p>
      <script>var x = "31.32.33.34:82";</script></body></html>`;
    expect(extractProxyLines(html, "text/html; charset=utf-8")).toEqual(["1.2.3.4:8080", "5.6.7.8:3128", "11.12.13.14:80", "21.22.23.24:81"]);
  });

  it("reads header and nested-table rows, a cell's whole text without comments or scripts, and an element's own text before its children's", () => {
    const html = `<table><tr><th>IP</th><th>Port</th></tr>
      <tr><td>1.2.3.4<!-- c --></td><td> <b>8080</b></td></tr>
      <tr><td>5.6.7.8<script>x</script></td><td>3128</td><td><table><tr><td>9.9.9.9</td><td>80</td></tr></table></td></tr>
      <tr><th>10.0.0.1</th><th>81</th></tr></table>
      <noscript>11.11.11.11:80</noscript><template><p>12.12.12.12:80</p></template>
      <p>Also <b>13.13.13.13</b> 82 <i>14.14.14.14:83</i> 15.15.15.15:84</p>`;
    expect(extractProxyLines(html, "text/html")).toEqual(["1.2.3.4:8080", "5.6.7.8:3128", "9.9.9.9:80", "10.0.0.1:81", "15.15.15.15:84", "14.14.14.14:83"]);
  });

  it("reads a list site's plain rows as any other table: every pair of a row, invalid ones dropped, repeats kept once, the text after them", () => {
    const html = `<!DOCTYPE html><html><head><title>List</title></head><body><table class="t"><thead><tr><th>IP</th><th>Port</th></tr></thead><tbody>
      <tr><td>1.2.3.4</td><td class="p">8080</td><td>US</td><td> 5.6.7.8\u00a0</td><td>3128</td><td>1.5 s</td><td>9.9.9.9</td><td>80</td></tr>
      <tr><td>999.1.1.1</td><td>80</td><td>10.0.0.1</td><td>0</td><td>10.0.0.2</td><td>65536</td></tr>
      <tr><th>11.11.11.11</th><th>81</th></tr>
      <tr><td>1.2.3.4</td><td>8080</td></tr>
      <tr><td>12.12.12.12:82</td><td>2 3</td></tr>
      <tr><td>13.13.13.13</td><td>83</td></tr>
      </tbody></table><p>1.2.3.4:8080 and 14.14.14.14:84</p></body></html>`;
    expect(extractProxyLines(html, "text/html")).toEqual([
      "1.2.3.4:8080",
      "5.6.7.8:3128",
      "9.9.9.9:80",
      "11.11.11.11:81",
      "13.13.13.13:83",
      "12.12.12.12:82",
      "14.14.14.14:84",
    ]);
  });

  it("reads JSON arrays and nested objects with ip or host and port fields, credentials and protocol kept", () => {
    const json = JSON.stringify({
      data: [
        { ip: "1.2.3.4", port: 8080 },
        { host: "5.6.7.8", port: "3128", protocol: "SOCKS5", username: "u", password: "p:w" },
        { ip: "9.9.9.9" },
        { nested: { ip_address: "11.12.13.14", port: 80, type: "https" } },
        "21.22.23.24:81",
        { ip: "example.com", port: 80 },
      ],
    });
    expect(extractProxyLines(json, "application/json")).toEqual(["1.2.3.4:8080", "socks5://5.6.7.8:3128:u:p:w", "https://11.12.13.14:80", "21.22.23.24:81"]);
  });

  it("passes IPv6 proxies on so the upload's rules refuse and count them", () => {
    expect(extractProxyLines(JSON.stringify([{ ip: "2001:db8::1", port: 80 }]))).toEqual(["[2001:db8::1]:80"]);
    expect(extractProxyLines("[2001:db8::2]:8080\n")).toEqual(["[2001:db8::2]:8080"]);
  });

  it("reads a body that claims JSON but is not as text, and survives garbage", () => {
    expect(extractProxyLines("[oops 1.2.3.4:80", "application/json")).toEqual(["1.2.3.4:80"]);
    expect(extractProxyLines("\u0000\uffff<<<>>>", "text/html")).toEqual([]);
    const deep = "[".repeat(10_000) + "]".repeat(10_000);
    expect(extractProxyLines(deep)).toEqual([]);
  });
});
