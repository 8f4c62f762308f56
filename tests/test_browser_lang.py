"""Language of parts (WCAG 3.1.2) as a screen reader meets it: every page of both editions in
Chromium, its DOM's text nodes walked once the page has loaded.

* the ``<html lang>`` is the edition's ("en", or "zh-…" on the Chinese pages);
* on an English page, every text node with a Han or kana character has an ancestor whose lang
  is Chinese ("zh…");
* on a Chinese page, every text node in English (no Han character, two Latin words of two letters
  or more: book/site/lang_parts.py's is_english) has an ancestor whose lang is "en";
* on a Chinese page, the page frame (outside the article) names no control in English (title,
  aria-label, placeholder, alt: the theme's tooltips and landmarks).

Not walked: what assistive technology does not read (aria-hidden subtrees, script, style) and
what is read the same in both voices or by its own rules (code, pre, kbd, samp, MathJax's output
and math source). The build marks the parts (book/site/lang_parts.py); this test is its check in
the browser, after the page's scripts have drawn what they draw on load.
"""

from __future__ import annotations

from pathlib import Path

import headless
import pytest

pytestmark = pytest.mark.slow

# The same rules as book/site/lang_parts.py (is_english, the Han and kana ranges), in the page.
WALK_JS = r"""() => {
  const HAN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u{20000}-\u{2fa1f}]/u;
  const WORDS = /[A-Za-z]{2,}/g;
  const SKIP = new Set(["SCRIPT", "STYLE", "CODE", "PRE", "KBD", "SAMP", "MATH", "NOSCRIPT",
                        "TEMPLATE", "TEXTAREA"]);
  const own = (document.documentElement.getAttribute("lang") || "").toLowerCase();
  const zhPage = own.startsWith("zh");
  const out = {lang: own, checked: 0, unmarked: [], frame: []};
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.data.replace(/\s+/g, " ").trim();
    if (!text) continue;
    let lang = null, skip = false;
    const top = document.documentElement;
    for (let el = node.parentElement; el && el !== top; el = el.parentElement) {
      const tag = el.tagName.toUpperCase();
      if (SKIP.has(tag) || tag.startsWith("MJX-") || el.getAttribute("aria-hidden") === "true"
          || el.classList.contains("math")) { skip = true; break; }
      if (lang === null && el.hasAttribute("lang")) lang = el.getAttribute("lang").toLowerCase();
    }
    if (skip) continue;
    lang = lang === null ? own : lang;
    const chinese = HAN.test(text);
    const english = !chinese && (text.match(WORDS) || []).length >= 2;
    if (!zhPage && chinese) {
      out.checked++;
      if (!lang.startsWith("zh")) out.unmarked.push(text.slice(0, 80));
    } else if (zhPage && english) {
      out.checked++;
      if (!(lang === "en" || lang.startsWith("en-"))) out.unmarked.push(text.slice(0, 80));
    }
  }
  if (zhPage) {
    const named = "[title], [aria-label], [placeholder], [alt]";
    for (const el of document.body.querySelectorAll(named)) {
      if (el.closest("article, [aria-hidden=true], [lang^=en]")) continue;
      for (const name of ["title", "aria-label", "placeholder", "alt"]) {
        const value = el.getAttribute(name);
        if (value && /[A-Za-z]{3,}/.test(value) && !HAN.test(value))
          out.frame.push(`<${el.tagName.toLowerCase()} ${name}="${value}">`);
      }
    }
  }
  return out;
}"""

EDITION_BUILDS = {"en": "built_book", "zh": "built_zh"}


def edition_pages(html_root: Path, edition: str) -> list[Path]:
    """Every page a reader can open in one edition's folder (the English folder of ``make book``
    holds the Chinese edition under zh/: that one is the other edition's)."""
    chinese = html_root / "zh" / "index.html"
    out = []
    for path in sorted(html_root.rglob("*.html")):
        parts = path.relative_to(html_root).parts
        if "_static" in parts or (edition == "en" and parts[0] == "zh" and chinese.is_file()):
            continue
        out.append(path)
    return out


def walk(page) -> dict:
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return page.evaluate(WALK_JS)


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    if not Path(headless.CHROMIUM).exists():
        pytest.fail("chromium is not installed: run `make test-deps` (make test does)")
    with sync_playwright() as p:
        browser = headless.launch(p)
        try:
            yield browser
        finally:
            browser.close()


@pytest.mark.parametrize("edition", sorted(EDITION_BUILDS))
def test_every_part_in_the_other_language_has_its_lang(request, edition, chromium):
    html_root = request.getfixturevalue(EDITION_BUILDS[edition])["html"]
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file://", "data:", "blob:")) else r.abort())
    problems, rows = [], []
    try:
        for path in edition_pages(html_root, edition):
            rel = path.relative_to(html_root).as_posix()
            page = context.new_page()
            page.goto(path.as_uri(), wait_until="load")
            found = walk(page)
            page.close()
            rows.append(f"{rel}: {found['checked']} checked, {len(found['unmarked'])} unmarked")
            wanted = "en" if edition == "en" else "zh"
            if found["lang"] != wanted and not (wanted == "zh" and found["lang"].startswith("zh-")):
                problems.append(f"{rel}: <html lang={found['lang']!r}>, not the {edition} "
                                "edition's")
            if found["unmarked"]:
                other = "Chinese" if edition == "en" else "English"
                problems.append(f"{rel}: {len(found['unmarked'])} {other} text node(s) without a "
                                f"lang: {found['unmarked'][:5]}")
            if found["frame"]:
                problems.append(f"{rel}: the page frame names controls in English: "
                                f"{sorted(set(found['frame']))}")
    finally:
        context.close()
    print(f"\n{edition}: " + "\n".join(rows))
    assert not problems, "\n".join(problems)
