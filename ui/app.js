// The web UI: talks only to the public API (POST /v1/chat/completions streaming, /index/run and GET /index/jobs/<id>,
// /knowledge_bases/run, /feedback). Text from the user, the model or the server is only ever set as textContent.
"use strict";

const $ = (id) => document.getElementById(id);
const MODEL = "agentic_rag";
const state = { history: [], turns: [], busy: false };

const PATH_NAMES = { citation: "条文引用", bm25: "关键词 BM25", dense: "向量" };
const DIMENSIONS = { relevance: "相关性", completeness: "完整性", accuracy: "准确性", coverage: "覆盖度" };
const DECISIONS = { pass: "评估通过 → 生成回答", retry: "未达标但有提升 → 按评估意见再改写一轮",
                    web_search: "本地证据不足 → 网络搜索",
                    uncovered: "知识库未收录决定性规则 → 直接网络搜索" };
const SITUATIONS = { sufficient: "证据充分", supplemented: "本地证据 + 网络补充", partial: "证据不完整",
                     none: "没有找到足够依据", unjudged: "未评估（普通检索）" };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value; else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function apiKey() { return localStorage.getItem("apiKey") || ""; }
function headers(json = true) {
  const h = json ? { "Content-Type": "application/json" } : {};
  if (apiKey()) h.Authorization = `Bearer ${apiKey()}`;
  return h;
}

async function errorText(response) {
  let detail = "";
  try { const body = await response.json(); detail = body.detail ?? JSON.stringify(body); }
  catch { detail = await response.text().catch(() => ""); }
  if (typeof detail !== "string") detail = JSON.stringify(detail);
  if (response.status === 401) return "需要 API 密钥：请在“知识库管理”里填写后重试。";
  return `服务器返回错误 ${response.status}：${detail || response.statusText}`;
}

async function callApi(name, payload) {
  const response = await fetch(`/${name}/run`, { method: "POST", headers: headers(), body: JSON.stringify(payload) });
  if (!response.ok) throw Object.assign(new Error(await errorText(response)), { status: response.status });
  return (await response.json()).result;
}

function mode() { return document.querySelector("input[name=mode]:checked").value; }
function scrollDown() { $("messages").scrollTop = $("messages").scrollHeight; }
function addMessage(role, text = "") {
  $("messages").querySelector(".hint")?.remove();
  const node = el("div", { class: `msg ${role}` });
  if (text) node.textContent = text;
  $("messages").append(node);
  scrollDown();
  return node;
}

// ---------- live steps ----------
function keys(top) { return (top || []).map((d) => String(d.key).replace(/^中华人民共和国/, "")).join("、"); }

function describeStep(step) {
  switch (step.stage) {
    case "route": return ["路由", step.route === "chitchat" ? `闲聊，直接回复（${step.decided_by}）` : `需要检索（${step.decided_by}）`];
    case "condense": return ["追问改写", `“${step.from}” → “${step.standalone}”`];
    case "rewrite": {
      const note = step.feedback ? `（依据评估意见：${step.feedback}）` : "";
      const fallback = step.status === "fallback" ? `；改写失败，只检索原问题：${step.reason}`
        : step.status === "skipped" ? `（${step.reason}）` : "";
      return [`第 ${step.round} 轮改写`, `${step.queries.map((q) => `「${q}」`).join(" ")}${note}${fallback}`];
    }
    case "retrieve": return [`检索·${PATH_NAMES[step.path] || step.path}`, `${step.count} 条；前几条：${keys(step.top) || "无"}`];
    case "fuse": return ["RRF 融合", `${step.count} 条：${keys(step.top)}`];
    case "rerank": return ["重排序", keys(step.top)];
    case "judge": return ["质量评估", null];
    case "coverage": return ["覆盖检查", `问题的决定性规则可能在《${step.document}》中，本知识库未收录（概率 ${step.probability.toFixed(2)}，判定线 ${step.threshold.toFixed(2)}）`];
    case "decision": {  // the figure of the judge that decided: the evaluator's probability, else the rubric's score
      const best = step.best_probability != null
        ? `最高相关概率 ${step.best_probability.toFixed(2)}，通过线 ${step.threshold.toFixed(2)}` : `最高分 ${step.best_score}/40`;
      return ["决策", `${DECISIONS[step.decision] || step.decision}（第 ${step.round} 轮，${best}）`];
    }
    case "web_search": return ["网络搜索", `${step.status}${step.message ? "：" + step.message : ""}${step.results?.length ? "；" + step.results.map((r) => r.title).join("、") : ""}`];
    case "evidence": return ["证据", `${SITUATIONS[step.situation] || step.situation}，${step.count} 条进入回答`];
    case "answer": return ["生成回答", step.error ? `失败：${step.error}` : `完成（${step.seconds} 秒）`];
    case "cache": return ["缓存", step.message];
    default: return [step.stage, JSON.stringify(step)];
  }
}

function stepItem(step) {
  const [label, text] = describeStep(step);
  const item = el("li", { "data-stage": step.stage }, el("span", { class: "stage", text: label }));
  if (step.stage === "judge") {
    const scores = el("span", { class: "scores" });
    const verdict = step.passed ? "通过" : "未通过";
    if (step.probability != null) {  // the trained relevance evaluator (JUDGE=evaluator|both)
      for (const p of step.passages || []) scores.append(el("span", { text: `${p.key} ${p.probability.toFixed(2)}` }));
      item.append(scores, el("b", { class: step.passed ? "pass" : "fail",
        text: `相关概率 ${step.probability.toFixed(2)}（通过线 ${step.threshold.toFixed(2)}）${verdict}` }));
    } else {
      for (const [key, name] of Object.entries(DIMENSIONS)) scores.append(el("span", { text: `${name} ${step.scores[key]}` }));
      item.append(scores, el("b", { class: step.passed ? "pass" : "fail", text: `${step.total}/40 ${verdict}` }));
    }
    if (step.missing) item.append(el("div", { class: "keys", text: `缺少：${step.missing}` }));
    if (step.error) item.append(el("div", { class: "fail", text: `评估出错：${step.error}` }));
  } else {
    item.append(el("span", { class: step.stage === "retrieve" || step.stage === "fuse" ? "keys" : "", text }));
  }
  return item;
}

function traceBox(message) {
  const box = el("details", { class: "trace", open: "" }, el("summary", { text: "处理步骤（进行中…）" }), el("ol"));
  message.append(box);
  return box;
}

function finishTrace(box, result) {
  for (const step of result.trace?.steps || []) {  // agent mode: the tool calls it made
    box.querySelector("ol").append(el("li", { "data-stage": "tool" }, el("span", { class: "stage", text: `工具·${step.tool}` }),
      el("span", { text: `${JSON.stringify(step.input)} → ${step.observation || "（无结果）"}` })));
  }
  if (result.trace?.stop_reason) {
    box.querySelector("ol").append(el("li", { "data-stage": "stop" }, el("span", { class: "stage", text: "结束" }),
      el("span", { text: result.trace.stop_reason })));
  }
  const count = box.querySelectorAll("li").length;
  box.querySelector("summary").textContent = `处理步骤（${count} 步，${result.trace?.total_seconds ?? "?"} 秒，LLM 调用 ${result.trace?.llm_calls_total ?? "?"} 次）`;
  box.append(el("details", {}, el("summary", { text: "完整追踪 JSON" }), el("pre", { text: JSON.stringify(result.trace, null, 2) })));
  box.removeAttribute("open");
}

// ---------- answer with clickable citations ----------
// the marks of the answer check (helpers/answer_check.py)
const CHECK_FLAGS = {
  "〔引文不符〕": "引文不符：这段引文不是所引法条的原文，且该法条不在检索到的证据里，请勿依赖。",
  "〔未见依据〕": "未见依据：检索到的法条里没有这个数字，请以法条原文为准。",
};
function escapeRegExp(text) { return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

function renderAnswer(node, result) {
  const targets = new Map();
  (result.citations || []).forEach((c) => (c.mentions || []).forEach((m) => {
    targets.set(m, c);
    if (c.version_mark) targets.set(m + c.version_mark, c);  // a version not in force today: the mark goes with it
  }));
  for (const bad of result.unverified_citations || []) targets.set(`${bad}〔未核实〕`, { unverified: true, mention: bad });
  for (const [mark, title] of Object.entries(CHECK_FLAGS)) targets.set(mark, { flag: true, title });
  node.textContent = "";
  const text = result.answer;
  const patterns = [...targets.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
  if (!patterns.length) { node.textContent = text; return; }
  const regex = new RegExp(patterns.join("|"), "g");
  let last = 0;
  for (const match of text.matchAll(regex)) {
    node.append(text.slice(last, match.index));
    const citation = targets.get(match[0]);
    if (citation.flag) {  // a quote or a number the answer check could not confirm
      node.append(el("span", { class: "cite unverified flag", text: match[0], title: citation.title }));
      last = match.index + match[0].length;
      continue;
    }
    const superseded = !citation.unverified && citation.in_force === false;
    const link = el("button", { type: "button", text: match[0],
                                class: citation.unverified ? "cite unverified" : superseded ? "cite superseded" : "cite" });
    if (citation.unverified) link.title = "未核实：检索到的证据中没有这一条";
    if (superseded) link.title = `不是现行有效的版本${citation.version_mark}`;
    link.addEventListener("click", () => showCitation(match[0], citation));
    node.append(link);
    last = match.index + match[0].length;
  }
  node.append(text.slice(last));
}

// a link target the page may open: http(s) URLs and paths of this site; anything else (javascript:, data:, …) is
// null and is shown as plain text. The browser's own URL parser decides, so "java\tscript:" or " JAVASCRIPT:" are
// seen as what the browser would open.
function safeUrl(url) {
  if (typeof url !== "string" || !url.trim()) return null;
  let parsed;
  try { parsed = new URL(url, window.location.href); } catch { return null; }
  return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
}

function showCitation(label, citation) {
  $("citation-title").textContent = citation.unverified ? citation.mention
    : citation.type === "web" ? `${citation.label}：${citation.title || ""}` : `《${citation.law}》${citation.article}`;
  $("citation-flag").textContent = citation.unverified ? "未核实：回答引用了这一条，但它不在检索到的证据里，请勿依赖。"
    : citation.in_force === false ? `这是${citation.version_date || "旧"}版本的条文，现已不再适用${citation.version_mark || ""}。`
    : citation.amended_by?.length ? `本条经修正：${citation.amended_by.join("、")}` : "";
  $("citation-text").textContent = citation.unverified ? "" : citation.text || "";
  const link = $("citation-link");
  const plain = $("citation-url");
  const target = safeUrl(citation.url);
  link.hidden = !target;
  plain.hidden = !citation.url || Boolean(target);
  if (target) { link.href = target; link.textContent = citation.url; } else link.removeAttribute("href");
  plain.textContent = target ? "" : citation.url || "";
  $("citation-view").hidden = false;
}

function scoreText(scores) {
  if (!scores) return "";
  return scores.probability != null ? `；相关概率 ${scores.probability.toFixed(2)}` : `；评估 ${scores.total}/40`;
}

// what makes a result less reliable than it looks (the knowledge base's problems, a law without a version in force
// on the date asked for): shown under the answer
function warningsBox(warnings) {
  const list = (Array.isArray(warnings) ? warnings : []).filter((w) => typeof w === "string" && w.trim());
  if (!list.length) return null;
  return el("div", { class: "warnings", role: "note" }, el("div", { class: "warnings-title", text: "请注意" }),
    el("ul", {}, ...list.map((w) => el("li", { text: w }))));
}

function showResult(message, box, body, result) {
  renderAnswer(body, result);
  finishTrace(box, result);
  const warnings = warningsBox(result.warnings);
  if (warnings) message.append(warnings);
  const meta = el("div", { class: "meta", text: `${SITUATIONS[result.situation] || ""}${scoreText(result.scores)}` });
  if (result.needs_human) meta.append(el("span", { class: "needs-human", text: "　建议咨询专业人士" }));
  message.append(meta);
  if (result.answer_id) message.append(feedbackBar(result));
}

// ---------- feedback on an answer: 👍 / 👎 and the right article (POST /feedback) ----------
let datalistCount = 0;
// thumbs as inline SVG: the emoji rendered as empty boxes with the fonts a server machine has
const THUMB = "M2 21h4V9H2v12zm20-11c0-1.1-.9-2-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L13.2 1 6.6 7.6C6.2 8 6 8.5 6 9v10" +
  "c0 1.1.9 2 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7.1c.1-.2.2-.5.2-.7v-2z";
function thumbButton(kind, label, title) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", "thumb");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", THUMB);
  if (kind === "down") path.setAttribute("transform", "rotate(180 12 12)");
  svg.append(path);
  return el("button", { type: "button", class: kind, title }, svg, document.createTextNode(` ${label}`));
}
// "第十三" is a citation being typed: searched as 第十三条, so that it is suggested (the hybrid search of the bare
// text ranked 第三十一条 first)
function articleQuery(text) { return /第[〇零一二三四五六七八九十百千\d]+$/.test(text) ? `${text}条` : text; }
function feedbackBar(result) {
  const bar = el("form", { class: "feedback" });
  const listId = `articles-${++datalistCount}`;
  const article = el("input", { type: "text", placeholder: "正确的条文是…（如 劳动合同法第八十二条）", list: listId,
                                 "aria-label": "正确的条文" });
  const options = el("datalist", { id: listId });
  const status = el("span", { class: "status" });
  const send = async (verdict) => {
    const text = article.value.trim();
    if (!verdict && !text) { status.className = "status error"; status.textContent = "请选择“有帮助”/“有问题”或填写正确的条文"; return; }
    bar.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    try {
      const response = await fetch("/feedback", { method: "POST", headers: headers(), body: JSON.stringify(
        { answer_id: result.answer_id, verdict: verdict || null, article: text || null }) });
      if (!response.ok) throw new Error(await errorText(response));
      const record = await response.json();
      status.className = "status";
      status.textContent = `已记录${record.article ? `：${record.article.replace(/^中华人民共和国/, "")}` : ""}，谢谢`;
    } catch (error) {
      status.className = "status error";
      status.textContent = String(error.message || error).includes("fetch") ? "无法连接服务器" : error.message;
    } finally {
      bar.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    }
  };
  let timer = null;
  article.addEventListener("input", () => {  // a search box over the knowledge base's articles
    clearTimeout(timer);
    const text = article.value.trim();
    if (text.length < 2) return;
    timer = setTimeout(async () => {
      try {
        const found = await callApi("agentic_rag", { query: articleQuery(text), mode: "retrieve", top_k: 8,
                                                     knowledge_base: result.knowledge_base || null });
        options.replaceChildren(...(found.documents || []).map((d) => el("option", { value: String(d.key) })));
      } catch { /* suggestions are a help: typing a citation works without them */ }
    }, 300);
  });
  bar.append(thumbButton("up", "有帮助", "回答有帮助"), thumbButton("down", "有问题", "回答有问题"),
             article, options, el("button", { type: "submit", class: "send-article", text: "提交条文" }), status);
  bar.querySelector(".up").addEventListener("click", () => send("up"));
  bar.querySelector(".down").addEventListener("click", () => send("down"));
  bar.addEventListener("submit", (e) => { e.preventDefault(); send(null); });
  return bar;
}

// ---------- conversation kept across reloads (this browser only) ----------
const STORE_KEY = "conversation";
function saveConversation() {
  try { localStorage.setItem(STORE_KEY, JSON.stringify(state.turns.slice(-20))); }
  catch { /* storage full or disabled: the conversation lives on in the page */ }
}

function restoreConversation() {
  let turns = [];
  try { turns = JSON.parse(localStorage.getItem(STORE_KEY) || "[]"); } catch { turns = []; }
  for (const { question, result } of turns) {
    addMessage("user", question);
    const message = addMessage("assistant");
    const box = traceBox(message);
    box.querySelector("summary").textContent = "处理步骤";
    const body = el("div", { class: "answer" });
    message.append(body);
    showResult(message, box, body, result);
    state.history.push({ role: "user", content: question }, { role: "assistant", content: result.answer });
  }
  state.turns = turns;
}

// ---------- chat ----------
// the law-version date as the API takes it (YYYY-MM-DD) from 2020-01-01, 2020/1/1 or 2020年1月1日: "" when empty,
// null when it is not a date (a text field, so that it reads 年-月-日 whatever the browser's own language)
function asOfDate(text) {
  const value = text.trim();
  if (!value) return "";
  const m = value.match(/^(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*日?$/);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return `${m[1]}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
}

async function ask(question) {
  const asOf = asOfDate($("as-of").value);
  $("as-of").setCustomValidity(asOf === null ? "请按 年-月-日 填写，如 2020-01-01" : "");
  if (asOf === null) { $("question").value ||= question; $("as-of").reportValidity(); return; }  // the question kept
  if (state.busy || !question.trim()) return;
  state.busy = true;
  $("send").disabled = true;
  addMessage("user", question);
  state.history.push({ role: "user", content: question });
  const message = addMessage("assistant");
  const box = traceBox(message);
  const body = el("div", { class: "answer" });
  message.append(body);
  let streamed = "";
  let result = null;
  try {
    const response = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(),
      body: JSON.stringify({ model: MODEL, stream: true, messages: state.history, mode: mode(),
                             knowledge_base: $("kb-select").value || null, as_of: asOf || null }),
    });
    if (!response.ok) throw new Error(await errorText(response));
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const chunk = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        for (const line of chunk.split("\n")) {
          if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
          const data = JSON.parse(line.slice(6));
          const event = data.event;
          if (event?.type === "rag_step") { box.querySelector("ol").append(stepItem(event.data)); scrollDown(); }
          else if (event?.type === "rag_result") result = event.data;
          else if (event?.type === "rag_error") throw new Error(event.data.message);
          else if (data.choices?.[0]?.delta?.content) { streamed += data.choices[0].delta.content; body.textContent = streamed; scrollDown(); }
        }
      }
    }
    if (!result) throw new Error("回答不完整：连接中断，请重试");
    showResult(message, box, body, result);
    state.history.push({ role: "assistant", content: result.answer });
    state.turns.push({ question, result });
    saveConversation();
  } catch (error) {
    message.classList.replace("assistant", "error");
    body.textContent = String(error.message || error).includes("fetch") ? "无法连接服务器，请检查服务是否在运行。" : String(error.message || error);
    box.remove();
    state.history.pop();
  } finally {
    state.busy = false;
    $("send").disabled = false;
    scrollDown();
  }
}

// ---------- knowledge bases ----------
async function refreshKnowledgeBases(select) {
  const list = $("kb-list");
  try {
    const { knowledge_bases: bases, default: fallback } = await callApi("knowledge_bases", { action: "list" });
    const current = select || $("kb-select").value || fallback;
    $("kb-select").replaceChildren(...bases.map((b) => el("option", { value: b.name, text: `${b.name}（${b.documents}）` })));
    if (bases.some((b) => b.name === current)) $("kb-select").value = current;
    list.replaceChildren(...bases.map((b) => {
      const remove = el("button", { type: "button", text: "删除", "aria-label": `删除 ${b.name}` });
      remove.addEventListener("click", () => deleteKnowledgeBase(b.name));
      const warnings = [b.incomplete_sources ? `${b.incomplete_sources} 个来源索引未完成` : "",
                        b.stale_sources ? `${b.stale_sources} 个来源需用当前模型重新向量化` : "",
                        b.stale_weight_sources ? `${b.stale_weight_sources} 个来源的关键词权重需重算` : ""].filter(Boolean);
      const label = el("span", { text: `${b.name}：${b.documents} 条，${b.sources} 个来源` });
      if (warnings.length) label.append(el("span", { class: "status error", text: `（${warnings.join("；")}）` }));
      return el("li", { "data-name": b.name }, label, remove);
    }));
  } catch (error) {
    list.replaceChildren(el("li", { class: "status error", text: error.message }));
    if (error.status === 401) askForKey();
  }
}

// The server needs a key (API_KEY) this browser has not given, or a wrong one: ask for it at once, not after a
// question failed.
function askForKey() {
  $("kb-panel").hidden = false;
  $("key-status").textContent = apiKey() ? "API 密钥不正确，请重新填写" : "服务器设置了 API 密钥：请先填写";
  $("key-status").className = "status error";
  $("api-key").focus();
}

async function deleteKnowledgeBase(name) {
  if (!confirm(`确定删除知识库“${name}”？其中的全部文档都会被删除，无法恢复。`)) return;
  try { await callApi("knowledge_bases", { action: "delete", name }); }
  catch (error) { alert(error.message); }
  await refreshKnowledgeBases();
}

function summarise(result) {
  const actions = { added: "已添加", replaced: "已更新", "re-embedded": "已重新向量化", resumed: "已补完",
                    relabelled: "已更新元数据", unchanged: "未变化" };
  return (result.results || []).map((r) => `${actions[r.action] || r.action} ${r.count} 条：${r.source}`).join("\n");
}

// ---------- index jobs: POST /index/run answers at once with a job; GET /index/jobs/<id> follows it ----------
const JOB_POLL_MS = 1000;
const JOB_ENDED = ["done", "failed", "interrupted"];
const JOB_PHASES = { queued: "排队等待索引…", preparing: "正在切分和检查…", indexing: "正在嵌入…", running: "索引中…" };
const JOB_POLL_FAILURES = 5;  // give up after this many failed polls in a row (the server restarting, the network)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function showJobProgress(job, progress, status) {
  const { done = 0, total = 0, phase = "" } = job.progress || {};
  progress.hidden = false;
  status.className = "status";
  if (total > 0) {
    progress.max = total;
    progress.value = Math.min(done, total);
    status.textContent = `已嵌入 ${done} / ${total} 条`;
  } else {
    progress.removeAttribute("value");  // indeterminate until the job knows how many articles it embeds
    status.textContent = JOB_PHASES[phase] || JOB_PHASES[job.status] || "索引中…";
  }
}

async function pollJob(jobId) {
  let failures = 0;
  for (;;) {
    let response;
    try { response = await fetch(`/index/jobs/${encodeURIComponent(jobId)}`, { headers: headers(false), cache: "no-store" }); }
    catch { response = null; }
    if (response?.ok) return response.json();
    if (response && response.status < 500) throw new Error(await errorText(response));  // 401, 404: final
    if (++failures >= JOB_POLL_FAILURES) {
      throw new Error(response ? `无法获取索引进度：${await errorText(response)}` : "无法获取索引进度：无法连接服务器");
    }
    await sleep(JOB_POLL_MS);
  }
}

// follow the job ``result`` (the answer of POST /index/run) until it ends, then show its results or its error and
// refresh the knowledge-base list, selecting ``select`` when given (the conversation stays as it is)
async function followIndexJob(result, select, progress, status) {
  // the POST's answer (queued, or done with its results after wait=true) or a job as GET /index/jobs gives it
  let job = { progress: { done: 0, total: 0, phase: result.status || "queued" }, ...result };
  job.status ||= result.results ? "done" : "queued";
  if (!job.results && !job.job_id) throw new Error("服务器没有返回索引任务");
  while (!JOB_ENDED.includes(job.status)) {
    showJobProgress(job, progress, status);
    await sleep(JOB_POLL_MS);
    job = await pollJob(job.job_id);
  }
  const { done = 0, total = 0 } = job.progress || {};
  progress.hidden = false;
  if (job.status === "done") {
    if (total > 0) { progress.max = total; progress.value = total; } else { progress.max = 1; progress.value = 1; }
    status.className = "status";
    status.textContent = [total > 0 ? `已嵌入 ${done} / ${total} 条，完成。` : "完成。", summarise(job)].filter(Boolean).join("\n");
  } else {
    if (total > 0) { progress.max = total; progress.value = Math.min(done, total); } else progress.hidden = true;
    status.className = "status error";
    const what = job.status === "interrupted" ? "索引中断" : "索引失败";
    status.textContent = `${what}：${job.error || "未知原因"}`;
  }
  await refreshKnowledgeBases(select);
}

// a page (re)loaded while an index job runs follows it again, in the upload panel (opened to show it)
async function resumeIndexJob() {
  let jobs;
  try {
    const response = await fetch("/index/jobs?limit=1", { headers: headers(false), cache: "no-store" });
    if (!response.ok) return;  // no key yet, or a server without jobs: nothing to resume
    ({ jobs } = await response.json());
  } catch { return; }
  const job = jobs?.[0];
  if (!job || JOB_ENDED.includes(job.status)) return;
  $("kb-panel").hidden = false;
  $("upload-status").textContent = `正在索引到知识库“${job.knowledge_base}”…`;
  try { await followIndexJob(job, job.knowledge_base, $("upload-progress"), $("upload-status")); }
  catch (error) { $("upload-status").className = "status error"; $("upload-status").textContent = error.message; }
}

// POST the form with XMLHttpRequest (fetch cannot report upload progress); resolves with the status and the body
function postForm(url, form, onUploadProgress) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", url);
    if (apiKey()) request.setRequestHeader("Authorization", `Bearer ${apiKey()}`);
    request.upload.onprogress = onUploadProgress;
    request.onload = () => resolve({ status: request.status, text: request.responseText });
    request.onerror = () => reject(new Error("无法连接服务器"));
    request.send(form);
  });
}

async function upload(event) {
  event.preventDefault();
  const files = $("upload-files").files;
  const name = $("upload-kb").value.trim();
  const form = new FormData();
  form.append("knowledge_base", name);
  for (const file of files) form.append("files", file, file.name);
  const status = $("upload-status");
  const progress = $("upload-progress");
  const button = $("upload-form").querySelector("button[type=submit]");
  button.disabled = true;
  progress.hidden = false;
  progress.max = 100;
  progress.value = 0;
  status.className = "status";
  status.textContent = "上传中…";
  try {
    const response = await postForm("/index/run", form, (e) => {
      if (e.lengthComputable) progress.value = Math.round((100 * e.loaded) / e.total);
      if (e.loaded === e.total) status.textContent = "上传完成，等待服务器接收…";
    });
    if (response.status !== 200) {
      let detail = response.text;
      try { detail = JSON.parse(detail).detail; } catch { /* keep the raw text */ }
      if (typeof detail !== "string") detail = JSON.stringify(detail);
      throw new Error(response.status === 401 ? "需要 API 密钥：请在下方填写后重试。" : `上传失败（${response.status}）：${detail}`);
    }
    progress.value = 100;
    await followIndexJob(JSON.parse(response.text).result, name, progress, status);
  } catch (error) {
    if (!progress.hasAttribute("value")) progress.hidden = true;  // no bar left spinning for a job that is not followed
    status.className = "status error";
    status.textContent = error.message;
  } finally {
    button.disabled = false;
  }
}

async function addLaws(event) {
  event.preventDefault();
  const status = $("laws-status");
  const progress = $("laws-progress");
  const button = $("laws-form").querySelector("button[type=submit]");
  const name = $("laws-kb").value.trim();
  const laws = $("laws-names").value.split(/[,，、]/).map((s) => s.trim()).filter(Boolean);
  button.disabled = true;
  progress.hidden = true;
  status.className = "status";
  status.textContent = "提交中…";
  try {
    const form = new FormData();  // /index/run takes a multipart form (it also accepts files)
    form.append("knowledge_base", name);
    for (const law of laws) form.append("laws", law);
    const response = await fetch("/index/run", { method: "POST", headers: headers(false), body: form });
    if (!response.ok) throw new Error(await errorText(response));
    await followIndexJob((await response.json()).result, null, progress, status);
  } catch (error) {
    if (!progress.hasAttribute("value")) progress.hidden = true;  // no bar left spinning for a job that is not followed
    status.className = "status error";
    status.textContent = String(error.message || error).includes("fetch") ? "无法连接服务器" : error.message;
  } finally {
    button.disabled = false;
  }
}

// ---------- wiring ----------
$("ask-form").addEventListener("submit", (e) => { e.preventDefault(); const q = $("question").value; $("question").value = ""; ask(q); });
$("question").addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("ask-form").requestSubmit(); } });
document.querySelector(".example")?.addEventListener("click", (e) => ask(e.target.textContent));
$("kb-toggle").addEventListener("click", () => { $("kb-panel").hidden = !$("kb-panel").hidden; });
$("new-chat").addEventListener("click", () => {
  state.history = []; state.turns = []; localStorage.removeItem(STORE_KEY); $("messages").replaceChildren();
});
$("citation-view").querySelector(".close").addEventListener("click", () => { $("citation-view").hidden = true; });
$("upload-form").addEventListener("submit", upload);
$("laws-form").addEventListener("submit", addLaws);
$("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  localStorage.setItem("apiKey", $("api-key").value.trim());
  $("key-status").textContent = "";
  refreshKnowledgeBases();
  resumeIndexJob();
});
restoreConversation();
refreshKnowledgeBases();
resumeIndexJob();
