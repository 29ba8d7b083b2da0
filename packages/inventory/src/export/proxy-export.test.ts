import { compileTemplate } from "./proxy-export-format.js";
import { templateLineSql } from "./proxy-export.js";

const occurrences = (text: string, part: string): number => text.split(part).length - 1;

describe("templateLineSql", () => {
  it("computes a costly placeholder the template repeats once per row, however often it is named", () => {
    // 111 × `protocol` fits in a template: each used to be its own correlated subquery per row.
    const { line, lateral } = templateLineSql(compileTemplate(`${"protocol ".repeat(111)}reputation_score reputation_score`));
    const sql = `SELECT ${line} FROM proxies p${lateral}`;
    expect(occurrences(sql, "FROM proxy_protocol_status")).toBe(1);
    expect(occurrences(sql, "p.reputation_score::text")).toBe(1);
    expect(occurrences(line, "v.protocol")).toBe(111);
    // OFFSET 0: the planner must not pull the subquery up and copy its expressions back into every use.
    expect(lateral).toMatch(/^ CROSS JOIN LATERAL \(SELECT .* AS protocol, .* AS reputation_score OFFSET 0\) v$/s);
  });

  it("keeps a placeholder named once inline, with no LATERAL", () => {
    const { line, lateral } = templateLineSql(compileTemplate("protocol://username:password@ip:port reputation_score"));
    expect(lateral).toBe("");
    expect(occurrences(line, "FROM proxy_protocol_status")).toBe(2); // once in the form with credentials, once without
    expect(line).not.toContain("v.");
  });
});
