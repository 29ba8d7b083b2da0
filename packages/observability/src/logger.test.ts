import { PassThrough } from "node:stream";
import { createLogger } from "./index.js";

function capture() {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
  return { stream, lines };
}

describe("logger redaction", () => {
  it("never writes secrets, at any depth", async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ stream });
    logger.child({ service: "gateway" }).info("upstream selected", {
      password: "hunter2hunter2",
      proxy: { ip: "1.2.3.4", auth_password: "s3cret", nested: [{ token: "abc.def.ghi" }] },
      Authorization: "Bearer xyz",
    });
    await new Promise((resolve) => setImmediate(resolve));
    const text = lines.join("\n");
    expect(text).toContain("upstream selected");
    expect(text).toContain("1.2.3.4");
    expect(text).toContain('"service":"gateway"');
    for (const secret of ["hunter2hunter2", "s3cret", "abc.def.ghi", "Bearer xyz"]) expect(text).not.toContain(secret);
  });
});
