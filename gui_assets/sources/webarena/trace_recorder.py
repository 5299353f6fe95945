"""Record real Playwright traces of a small shop served on localhost (Debian's chromium).

Used by the tests (when chromium is present) and to make the demo mirror's WebArena traces,
which ship in `data/` beside it: `python -m gui_assets.sources.webarena.trace_recorder OUT_DIR`.
The script acts like a person would: it scrolls before clicking below the fold. The board
page lays its boxes out at fixed CSS px (`BOARD`), so tests check recorded points against the
page's own layout.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
_STYLE = (
    "body{margin:0;font-family:sans-serif;background:#f6f7fb}header{background:#1f3b70;color:#fff;"
    "padding:16px 24px;\nfont-size:24px}main{padding:24px}input{width:320px;height:34px;font-size:16px;"
    "border:2px solid #889}\nbutton{height:40px;padding:0 18px;font-size:16px;background:#0d6efd;"
    "color:#fff;border:0;border-radius:6px}\nselect{height:34px;font-size:16px}.card{display:inline-block;"
    "width:200px;height:150px;margin:12px;\nbackground:linear-gradient(#dde,#aab);border-radius:8px;"
    "padding:8px}a{font-size:18px}"
)

PAGES = {
    "index.html": f"""<!doctype html><html><head><style>{_STYLE}</style></head><body>
<header>One Stop Market</header><main>
<input id="q" placeholder="Search entire store here..."> <button id="go">Search</button>
<select id="sort"><option>Relevance</option><option>Price</option><option>Name</option></select>
<a id="deals" href="deals.html" target="_blank">Today's deals</a>
<div>{"".join(f'<div class="card">Product {i}</div>' for i in range(24))}</div>
<button id="more">Load more</button></main></body></html>""",
    "deals.html": f"""<!doctype html><html><head><style>{_STYLE}</style></head><body>
<header>Deals</header><main><button id="claim">Claim coupon</button></main></body></html>""",
    # Fixed geometry (CSS px) the tests check points against: BOARD names each box.
    "board.html": """<!doctype html><html><head><style>body{margin:0;font-family:sans-serif}
div,input{position:absolute;box-sizing:border-box}#card{background:#c44;color:#fff}
#zone{background:#4a4;border:3px dashed #262}#note{border:2px solid #889}</style></head><body>
<div id="card" draggable="true" style="left:60px;top:80px;width:100px;height:60px">card</div>
<div id="zone" style="left:600px;top:380px;width:200px;height:120px">drop here</div>
<input id="note" style="left:300px;top:40px;width:240px;height:32px"> <input id="file" type="file"
style="left:300px;top:120px"><script>const z=document.getElementById('zone');
z.addEventListener('dragover',e=>e.preventDefault());
z.addEventListener('drop',e=>{e.preventDefault();z.textContent='dropped'})</script></body></html>""",
}
BOARD = {"card": (60, 80, 100, 60), "zone": (600, 380, 200, 120), "note": (300, 40, 240, 32)}  # x, y, w, h


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """The pages on http://127.0.0.1:<free port>/ for the duration of the block."""
    for name, html in PAGES.items():
        (directory / name).write_text(html, encoding="utf-8")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

    handler = functools.partial(Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # serve_forever looks for the stop request this often; shutdown() waits for that look (the
    # default, 0.5 s, added half a second to every recording).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


PAUSE_MS = 400  # a person looks before acting; it lets the screencast show the current screen


def shop_session(page: Any, context: Any, base: str, query: str) -> None:
    """Search, sort, scroll down, load more, open the deals tab and claim a coupon."""

    def look(p: Any = page) -> None:
        p.wait_for_timeout(PAUSE_MS)

    page.goto(base + "index.html")
    look()
    page.click("#q")
    look()
    page.fill("#q", query)
    look()
    page.press("#q", "Enter")
    look()
    page.select_option("#sort", "Price")
    look()
    page.hover("#deals")
    look()
    page.mouse.move(600, 400)
    look()
    page.mouse.wheel(0, 900)
    look()
    box = page.locator("#more").bounding_box()
    if box and box["y"] > 0:  # now in view, as a person would see it before clicking
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    look()
    page.mouse.wheel(0, -900)
    look()
    with context.expect_page() as new:
        page.click("#deals")
    deals = new.value
    deals.wait_for_load_state()
    look(deals)
    deals.dblclick("#claim")
    look(deals)
    deals.keyboard.press("Escape")
    look(deals)


def record(
    out: Path,
    session: Callable[[Any, Any, str], None],
    viewport: tuple[int, int] | None = (1024, 640),
    window: tuple[int, int] | None = None,
    screenshots: bool = True,
    snapshots: bool = True,
) -> Path:
    """Record one trace archive of `session(page, context, base_url)` into `out`.

    viewport None records a context with noDefaultViewport (the page is the window, `window`
    sized); screenshots / snapshots are tracing.start's own switches."""
    from playwright.sync_api import sync_playwright  # a test dependency, imported only here

    work = out.parent / f".{out.stem}-site"
    work.mkdir(parents=True, exist_ok=True)
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    if window:
        args.append(f"--window-size={window[0]},{window[1]}")
    try:
        with serve(work) as base, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
            if viewport is None:
                context = browser.new_context(no_viewport=True)
            else:
                context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
            context.tracing.start(screenshots=screenshots, snapshots=snapshots)
            page = context.new_page()
            session(page, context, base)
            context.tracing.stop(path=str(out))
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    for task_id, query in (("274", "usb wifi"), ("275", "xbox")):
        record(target / f"{task_id}.zip", lambda page, ctx, base, q=query: shop_session(page, ctx, base, q))
        print(target / f"{task_id}.zip")
