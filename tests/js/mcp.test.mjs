// A run whose tools came from an MCP server, mounted on a page (jsdom): each call's server
// badge, what the server logged while the call ran, its log, the filter by server, an image
// drawn from its bytes (never SVG, never a URL), structured content as a JSON tree.
import assert from "node:assert/strict";
import { test } from "node:test";
import { JSDOM } from "jsdom";
import { loadCase, settled, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame", "Event"]) globalThis[name] = dom.window[name];
const { mount } = await import(src("debugger.js"));
const { drawnImage } = await import(src("blocks.js"));

async function mountedRound(n) {
  const el = document.createElement("div");
  document.body.append(el);
  const view = mount(el, loadCase("mcp_server"));
  await settled(60);
  const row = el.querySelector(`.tl-scroller .tl-row[data-n="${n}"]`);
  assert.ok(row, `round ${n} is listed`);
  row.click();
  await settled(60);
  return { el, ...view };
}

const toolBlocks = (el) => [...el.querySelectorAll(".tl-detail .tl-block")].filter((b) => b.querySelector(".tl-block-title").textContent.startsWith("Tool "));

test("each MCP call carries its server's badge; other tools none", async () => {
  const { el, dispose } = await mountedRound(1);
  const byName = Object.fromEntries(toolBlocks(el).map((b) => [b.querySelector(".tl-block-title").textContent, b]));
  assert.equal(byName["Tool count"].querySelector(".tl-chip-server").textContent, "inventory");
  assert.equal(byName["Tool shot"].querySelector(".tl-chip-server").textContent, "inventory");
  assert.equal(byName["Tool hostile"].querySelector(".tl-chip-server"), null);
  assert.match(byName["Tool count"].querySelector(".tl-chip-server").title, /MCP server inventory \(stdio\)/);
  dispose();
});

test("what the server logged while a call ran sits in that call, numbered, its controls shown as codes", async () => {
  const { el, dispose } = await mountedRound(1);
  const count = toolBlocks(el).find((b) => b.querySelector(".tl-block-title").textContent === "Tool count");
  const log = count.querySelector(".tl-server-log");
  assert.ok(log, "the call shows its server's lines");
  assert.match(log.textContent, /^\d+: bolts: /);
  assert.doesNotMatch(log.textContent, /\u202e/); // a bidirectional override is shown, never obeyed
  assert.equal(el.querySelector("script, img[src^='http'], iframe"), null);
  dispose();
});

test("an image result is drawn from its bytes; structured content is a JSON tree", async () => {
  const { el, dispose } = await mountedRound(1);
  const shot = toolBlocks(el).find((b) => b.querySelector(".tl-block-title").textContent === "Tool shot");
  const img = shot.querySelector("img.tl-result-img");
  assert.ok(img, "the image is drawn");
  assert.match(img.getAttribute("src"), /^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
  const tree = shot.querySelector(".tl-json");
  assert.ok(tree, "structured content as a tree");
  assert.match(tree.textContent, /"page"/);
  dispose();
});

test("the server's log and the filter by server", async () => {
  const { el, store, dispose } = await mountedRound(1);
  const server = [...el.querySelectorAll(".tl-detail .tl-block-title")].find((t) => t.textContent === "Server inventory log");
  assert.ok(server, "the server's log block");
  const v = store.run.servers.get("inventory");
  assert.ok(v.lastLine > v.lines.size, "a log longer than the bound keeps the newest lines");
  const sel = el.querySelector(".tl-detail-head select");
  assert.equal(sel.hidden, false);
  assert.deepEqual([...sel.options].map((o) => o.textContent), ["every tool", "server inventory"]);
  sel.value = "inventory";
  sel.dispatchEvent(new Event("change"));
  await settled(30);
  assert.deepEqual(toolBlocks(el).map((b) => b.querySelector(".tl-block-title").textContent), ["Tool count", "Tool shot"]);
  assert.match(el.querySelector(".tl-detail").textContent, /1 call of other tools hidden by the server filter/);
  dispose();
});

test("the crash's call names its server and the cause in words", async () => {
  const { el, dispose } = await mountedRound(2);
  const crash = toolBlocks(el).find((b) => b.querySelector(".tl-block-title").textContent === "Tool crash");
  assert.match(crash.textContent, /reason: the MCP server exited/);
  assert.match(crash.textContent, /FATAL: crash in crash_tool/);
  assert.doesNotMatch(crash.textContent, /timed out/);
  dispose();
});

test("only raster images of the allowed types are drawn: SVG, URLs and bad data are refused", () => {
  const png = { type: "image", mime_type: "image/png", base64: "iVBORw0KGgo=" };
  assert.ok(drawnImage(png));
  assert.equal(drawnImage({ ...png, mime_type: "image/svg+xml" }), null);
  assert.equal(drawnImage({ ...png, mime_type: "text/html" }), null);
  assert.equal(drawnImage({ ...png, base64: "abc\"><script>" }), null);
  assert.equal(drawnImage({ type: "image", url: "https://example.com/x.png" }), null);
});
