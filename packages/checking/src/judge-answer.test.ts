import { addressesIn, createAnonymityClassifier } from "./anonymity.js";
import { compileJudgeRegex, JudgeRegexError, judgeRegexProblem } from "@roost/global-config";
import { defaultJudgeMatcher } from "./judge-answer.js";

describe("judge regexes", () => {
  it("run with RE2 semantics and refuse what RE2 cannot do in linear time", () => {
    expect(compileJudgeRegex("REMOTE_ADDR\\s*=\\s*\\d")("REMOTE_ADDR = 1.2.3.4")).toBe(true);
    expect(compileJudgeRegex("^elite$")("x\nelite")).toBe(false);
    for (const bad of ["(a)\\1", "(?=a)", "(?<!a)b", "(unclosed"]) {
      expect(() => compileJudgeRegex(bad)).toThrow(JudgeRegexError);
      expect(judgeRegexProblem(bad)).toEqual(expect.any(String));
    }
    expect(judgeRegexProblem("default")).toBeNull();
    expect(judgeRegexProblem("a+b")).toBeNull();
  });

  it("match a catastrophic-backtracking pattern over a long body at once", () => {
    const started = process.hrtime.bigint();
    expect(compileJudgeRegex("(a+)+$")(`${"a".repeat(50_000)}!`)).toBe(false);
    expect(Number(process.hrtime.bigint() - started) / 1e9).toBeLessThan(5);
  });

  it("`default` wants two standard headers echoed with the values sent", () => {
    const match = defaultJudgeMatcher(["USER-AGENT", "HOST", "ACCEPT", "ACCEPT-ENCODING"], {
      "user-agent": "Roost-checker/abc123",
      host: "judge.example:8080",
      accept: "text/plain;q=0.9,*/*;q=0.1",
    });
    expect(match("HTTP_USER_AGENT = Roost-checker/abc123\nHTTP_HOST = judge.example:8080")).toBe(true);
    expect(match("HTTP_USER_AGENT = Roost-checker/abc123")).toBe(false);
    expect(match("<html>nginx error page</html>")).toBe(false);
  });
});

describe("anonymity", () => {
  const classify = createAnonymityClassifier(["VIA", "X-FORWARDED-FOR", "FORWARDED", "X-REAL-IP", "CLIENT-IP", "X-PROXY-ID"]);

  it.each([
    ["transparent: the checker's address in X-Forwarded-For", "x-forwarded-for: 203.0.113.7\nhost: j", "transparent"],
    ["transparent: the address anywhere", "REMOTE_ADDR = 203.0.113.7", "transparent"],
    ["anonymous: Via", "Via: 1.1 tinyproxy (tinyproxy/1.11.1)", "anonymous"],
    ["anonymous: azenv style", "HTTP_X_FORWARDED_FOR = unknown", "anonymous"],
    ["anonymous: JSON echo", '{"headers": {"X-Real-Ip": "10.1.1.1"}}', "anonymous"],
    ["elite: an empty proxy header", "HTTP_VIA = \nHTTP_HOST = j", "elite"],
    ["elite: a longer address that contains the checker's", "REMOTE_ADDR = 203.0.113.71", "elite"],
    ["elite: a header name inside another", "HTTP_NOT_VIAX = yes", "elite"],
  ])("%s", (_what, body, level) => {
    expect(classify(body, ["203.0.113.7"])).toBe(level);
  });

  it("finds the addresses a direct answer shows", () => {
    expect(addressesIn("REMOTE_ADDR = 198.51.100.4\nSERVER 10.0.0.1 and 300.1.1.1 and 1.2.3.4.5")).toEqual(["198.51.100.4", "10.0.0.1"]);
  });
});
