// The words and numbers a person reads: outcomes, reasons, money, durations, counts.
// The usd() digits are format_usd's (toolloop_lab/_spend/usage.py) for the same amounts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { src } from "./fixtures.mjs";

const { outcomeWords, reasonWords, usd, word, OUTCOME, NOT_RUN } = await import(src("words.js"));
const { clip, duration, tokens, plural, pct, count } = await import(src("format.js"));

test("an outcome reads in words, with why a final-answer call ran", () => {
  assert.equal(outcomeWords("synthesis", "stuck"), "Answered by a final-answer call (model repeating itself)");
  assert.equal(outcomeWords("final_answer", null), OUTCOME.final_answer);
  assert.notEqual(OUTCOME.final_answer, "final_answer");
  assert.equal(outcomeWords("a_newer_outcome", null), "a_newer_outcome");
});

test("a reason reads in words; an unknown code or a prototype's key reads as itself", () => {
  for (const [code, said] of Object.entries(NOT_RUN)) assert.equal(reasonWords(code), said);
  assert.equal(reasonWords("not_available"), "unknown tool");
  assert.equal(reasonWords("constructor"), "constructor");
  assert.equal(reasonWords("__proto__"), "__proto__");
  assert.equal(word(OUTCOME, "toString"), "toString");
});

test("usd writes four significant digits, trailing zeros dropped, never an exponent", () => {
  const cases = [
    [0, "$0"],
    ["0.0002187", "$0.0002187"],
    [0.0002187, "$0.0002187"],
    ["0.00021875", "$0.0002188"],
    [1234.5678, "$1,234.57"],
    ["1E-7", "$0.0000001"],
    [1e-7, "$0.0000001"],
    [2.5, "$2.5"],
    [-0.5, "-$0.5"],
    [1e21, "$1,000,000,000,000,000,000,000"],
    [null, "unpriced"],
    [undefined, "unpriced"],
    [NaN, "unpriced"],
    ["not money", "unpriced"],
  ];
  for (const [amount, said] of cases) assert.equal(usd(amount), said, `usd(${amount})`);
});

test("durations read as a person says them", () => {
  assert.equal(duration(0.25), "250 ms");
  assert.equal(duration(2.54), "2.5 s");
  assert.equal(duration(184), "3 min 04 s");
  assert.equal(duration(3720), "1 h 02 min");
  assert.equal(duration(-3), "0 ms");
  assert.equal(duration(null), "—");
  assert.equal(duration(Infinity), "—");
});

test("counts and shares", () => {
  assert.equal(tokens(12345), "12,345");
  assert.equal(tokens(undefined), "—");
  assert.equal(count(1000), "1,000");
  assert.equal(plural(1, "round"), "1 round");
  assert.equal(plural(2, "round"), "2 rounds");
  assert.equal(plural(3, "more entry", "more entries"), "3 more entries");
  assert.equal(pct(0.4567), "45.7%");
  assert.equal(pct(null), "—");
});

test("a cut text ends in the one marker Python writes, counted in code points", () => {
  assert.equal(clip("short", 300), "short");
  assert.equal(clip("x".repeat(1234), 3), "xxx… (1,234 chars)");
  // an astral character is one character, as in Python's len()
  assert.equal(clip("😀😀😀😀", 2), "😀😀… (4 chars)");
});
