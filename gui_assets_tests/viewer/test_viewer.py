"""`gui-assets view`: the viewer's contract, checked in a real browser (Debian's chromium).

A small real build (Mind2Web train: 1280x1080 frames, CLICK, grounded TYPE, ungrounded
steps, SCROLL; cua-lite CUAGym browser_use: 1280x800 frames, ungrounded TYPE, SCROLL, DRAG) is
served by `gui-assets view --port 0` in its own process. Each step is opened by URL or by
keyboard and the page's geometry is compared with the shard read by h5py: `#action-point`
centred on (x1, y1) of `#frame` within 1 CSS px at two zoom levels, `#eye-rect` on eye_rect,
no point on an ungrounded step, the SCROLL label the inverse of the gesture. The same holds
for a lone shard in an empty folder and for the `--html` export opened from file://.
Screenshots go to test-artifacts/viewer/.
"""

from __future__ import annotations

import io
import json
import re
import select
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from PIL import Image

from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.cuagym.source import SPEC as CUAGYM
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.viewer import viewer_command
from gui_assets.viewer.catalog import BadPath, Catalog, NotServed, ServedRoot, read_file_index
from gui_assets.viewer.frames import encode_png
from gui_assets_tests.conftest import clean_env
from gui_assets_tests.test_layering import imported_names

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "viewer"
CHROMIUM = Path("/usr/bin/chromium")
GUI_ASSETS = Path(sys.executable).with_name("gui-assets")
VIEWPORT = {"width": 1400, "height": 900}


@dataclass(frozen=True)
class Step:
    """One step as the shard stores it."""

    file: str  # relative to the served root
    demo: str
    t: int
    type: str
    params: tuple[float, float, float, float]
    mask: tuple[int, int, int, int]
    eye_rect: tuple[float, float, float, float]
    frame_hw: tuple[int, int]
    steps: int

    @property
    def query(self) -> str:
        return urllib.parse.urlencode({"file": self.file, "demo": self.demo, "step": self.t})


def read_steps(root: Path) -> list[Step]:
    steps = []
    for path in sorted(root.rglob("*.hdf5")):
        if "_work" in path.parts:
            continue
        with h5py.File(path, "r") as f:
            types = json.loads(f["data"].attrs["gui_action_types"])  # the file's own code table
            for name in f["data"]:
                d = f["data"][name]
                hw = tuple(d["obs/agentview_rgb"].shape[1:3])
                codes, params, masks, rects = (
                    d[k][:] for k in ("action_type", "action_params", "action_mask", "eye_rect")
                )
                for t, code in enumerate(codes):
                    steps.append(
                        Step(
                            path.relative_to(root).as_posix(), name, t, types[code],
                            tuple(float(v) for v in params[t]), tuple(int(m) for m in masks[t]),
                            tuple(float(v) for v in rects[t]), hw, len(codes),
                        )
                    )  # fmt: skip
    return steps


def first(steps: list[Step], type_: str, mask: tuple[int, ...], hw: tuple[int, int] | None = None) -> Step:
    return next(s for s in steps if s.type == type_ and s.mask == mask and (hw is None or s.frame_hw == hw))


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory, demo_mirror: Path) -> Path:
    out = tmp_path_factory.mktemp("viewer-build")
    raw = RawSettings(mode="mirror", mirror=demo_mirror)
    build_directory(MIND2WEB, "train", out, raw)
    build_directory(CUAGYM, "browser_use", out, raw)
    return out


@pytest.fixture(scope="module")
def steps(build: Path) -> list[Step]:
    found = read_steps(build)
    assert {s.frame_hw for s in found} == {(1080, 1280), (800, 1280)}
    return found


class Served:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url


def serve(*paths: Path) -> Served:
    proc = subprocess.Popen(
        [str(GUI_ASSETS), "view", *map(str, paths), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(), cwd=REPO,
    )  # fmt: skip
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    line = proc.stdout.readline() if ready else ""
    if not re.fullmatch(r"http://127\.0\.0\.1:\d+/\n", line):
        proc.kill()
        raise AssertionError(f"first line {line!r}; stderr: {proc.communicate(timeout=10)[1][-2000:]}")
    return Served(proc, line.strip())


def stop(served: Served) -> None:
    served.proc.terminate()
    try:
        served.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        served.proc.kill()


@pytest.fixture(scope="module")
def server(build: Path) -> Iterator[Served]:
    served = serve(build)
    yield served
    stop(served)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, errors


def open_step(page: Any, base: str, step: Step) -> None:
    page.goto(f"{base}?{step.query}")
    wait_step(page, step.t)


def wait_step(page: Any, t: int) -> None:
    page.wait_for_selector(f'#frame[data-step="{t}"]', timeout=30_000)


BOXES_JS = """() => {
  const box = (id) => {
    const e = document.getElementById(id);
    if (!e) return null;
    const r = e.getBoundingClientRect();
    return {x: r.x, y: r.y, w: r.width, h: r.height, data: {...e.dataset}};
  };
  return {frame: box('frame'), point: box('action-point'), eye: box('eye-rect'), arrow: box('action-arrow'),
          scroll: box('scroll-label'), natural: [document.getElementById('frame').naturalWidth,
          document.getElementById('frame').naturalHeight]};
}"""


def boxes(page: Any) -> dict[str, Any]:
    return page.evaluate(BOXES_JS)


def assert_geometry(page: Any, step: Step) -> dict[str, Any]:
    """#action-point and #eye-rect sit where the step's params and eye_rect say, within 1 px."""
    b = boxes(page)
    frame = b["frame"]
    assert b["natural"] == [step.frame_hw[1], step.frame_hw[0]]  # the frame really decoded
    if step.mask == (1, 1, 0, 0):
        point = b["point"]
        assert point is not None, step
        cx, cy = point["x"] + point["w"] / 2, point["y"] + point["h"] / 2
        assert abs(cx - (frame["x"] + step.params[0] * frame["w"])) <= 1, (step, point, frame)
        assert abs(cy - (frame["y"] + step.params[1] * frame["h"])) <= 1, (step, point, frame)
        assert float(point["data"]["x"]) == step.params[0] and float(point["data"]["y"]) == step.params[1]
    else:
        assert b["point"] is None, step
    x1, y1, x2, y2 = step.eye_rect
    eye = b["eye"]
    assert abs(eye["x"] - (frame["x"] + x1 * frame["w"])) <= 1
    assert abs(eye["y"] - (frame["y"] + y1 * frame["h"])) <= 1
    assert abs(eye["w"] - (x2 - x1) * frame["w"]) <= 1
    assert abs(eye["h"] - (y2 - y1) * frame["h"]) <= 1
    return b


def zoom(page: Any, level: str) -> None:
    page.click(f'#zoom button[data-zoom="{level}"]')


# --- the page in a browser --------------------------------------------------------------------


def test_the_first_line_is_the_address_and_the_list_shows_every_demo(server, steps, page):
    page.goto(server.url)
    page.wait_for_selector("#demo-list[data-ready] tbody tr")
    demos = {(s.file, s.demo) for s in steps}
    rows = page.locator("#demo-list tbody tr")
    assert rows.count() == len(demos)
    assert {(r.get_attribute("data-file"), r.get_attribute("data-demo")) for r in rows.all()} == demos
    page.screenshot(path=ARTIFACTS / "1-demo-list.png")

    page.select_option("#filter-source", "cuagym")
    assert rows.count() == len({(s.file, s.demo) for s in steps if s.file.startswith("cuagym")})
    page.select_option("#filter-source", "")
    page.select_option("#filter-type", "DRAG")
    with_drag = {(s.file, s.demo) for s in steps if s.type == "DRAG"}
    assert 0 < rows.count() == len(with_drag)
    assert {(r.get_attribute("data-file"), r.get_attribute("data-demo")) for r in rows.all()} == with_drag

    rows.first.click()
    wait_step(page, 0)
    assert "step=0" in page.url and "demo=" in page.url


@pytest.mark.parametrize(
    ("type_", "hw"),
    [("CLICK", (1080, 1280)), ("TYPE", (1080, 1280)), ("CLICK", (800, 1280)), ("HOVER", (800, 1280))],
)
def test_a_grounded_point_is_centred_on_its_params_at_two_zooms(server, steps, page, type_, hw):
    step = first(steps, type_, (1, 1, 0, 0), hw)
    open_step(page, server.url, step)
    fit = assert_geometry(page, step)
    assert fit["frame"]["w"] < step.frame_hw[1]  # "fit" really scaled the frame down
    zoom(page, "2")
    doubled = assert_geometry(page, step)
    assert abs(doubled["frame"]["w"] - 2 * step.frame_hw[1]) <= 1
    zoom(page, "1")
    assert abs(assert_geometry(page, step)["frame"]["w"] - step.frame_hw[1]) <= 1
    zoom(page, "fit")
    page.screenshot(path=ARTIFACTS / f"2-{type_.lower()}-{hw[0]}p.png")


@pytest.mark.parametrize(("type_", "source"), [("CLICK", "mind2web"), ("TYPE", "cuagym")])
def test_an_ungrounded_step_has_no_action_point(server, steps, page, type_, source):
    step = next(s for s in steps if s.type == type_ and s.mask == (0, 0, 0, 0) and s.file.startswith(source))
    open_step(page, server.url, step)
    assert page.locator("#action-point").count() == 0
    assert "ungrounded" in page.locator("#action-banner").inner_text()
    assert_geometry(page, step)
    page.screenshot(path=ARTIFACTS / f"3-ungrounded-{type_.lower()}.png")


def test_scroll_and_drag_arrows_carry_the_gesture_and_the_scroll_label_its_inverse(server, steps, page):
    gestures = [s for s in steps if s.type in ("SCROLL", "DRAG") and s.mask == (1, 1, 1, 1)]
    assert {s.type for s in gestures} == {"SCROLL", "DRAG"}
    inverse = {"up": "down", "down": "up", "left": "right", "right": "left"}
    for step in gestures:
        open_step(page, server.url, step)
        b = assert_geometry(page, step)
        arrow = b["arrow"]["data"]
        assert [float(arrow[k]) for k in ("x1", "y1", "x2", "y2")] == list(step.params)
        x1, y1, x2, y2 = step.params
        if step.type == "DRAG":
            assert b["scroll"] is None
            continue
        dx, dy = x2 - x1, y2 - y1
        gesture = ("down" if dy > 0 else "up") if abs(dy) >= abs(dx) else ("right" if dx > 0 else "left")
        label = page.locator("#scroll-label")
        assert label.get_attribute("data-view") == inverse[gesture]
        assert inverse[gesture] in label.inner_text()
        if dy < 0:  # "scroll(down)" has y2 < y1
            assert label.get_attribute("data-view") == "down"
    page.screenshot(path=ARTIFACTS / "4-gesture.png")


def test_keys_move_one_step_and_the_url_follows(server, steps, page):
    step = next(s for s in steps if s.t == 0 and s.steps >= 4)
    open_step(page, server.url, step)
    page.keyboard.press("ArrowRight")
    wait_step(page, 1)
    assert "step=1" in page.url
    page.keyboard.press("ArrowRight")
    wait_step(page, 2)
    page.keyboard.press("ArrowLeft")
    wait_step(page, 1)
    page.keyboard.press("End")
    wait_step(page, step.steps - 1)
    assert f"step={step.steps - 1}" in page.url
    page.keyboard.press("ArrowRight")  # past the end: stays on the last step
    page.keyboard.press("Home")
    wait_step(page, 0)
    for t in (1, 2):  # each step's overlay, reached by key, is that step's
        page.keyboard.press("ArrowRight")
        wait_step(page, t)
        assert_geometry(page, next(s for s in steps if (s.file, s.demo, s.t) == (step.file, step.demo, t)))
    page.locator("#timeline .tick").nth(3).click()
    wait_step(page, 3)
    assert "step=3" in page.url


def test_the_header_and_the_action_card_count_steps_as_the_url_does(server, steps, page):
    """One convention: step t of the URL (counted from 0) is "step t (0-last)" in the header and
    in the action card alike."""
    step = next(s for s in steps if s.t == 3 and s.steps >= 5)
    open_step(page, server.url, step)
    label = f"step 3 (0\u2013{step.steps - 1})"
    assert page.locator("#step-label").inner_text() == label
    assert label in page.locator("#action-card").inner_text()
    assert page.locator("#timeline .tick.current").get_attribute("data-step") == "3"


@pytest.mark.parametrize(("asked", "says"), [("99", "is out of range"), ("-1", "is not a step number")])
def test_a_step_past_the_demo_is_named_with_the_valid_range_not_shown_as_another(
    server, steps, page, asked, says
):
    step = next(s for s in steps if s.t == 0)
    page.goto(f"{server.url}?{urllib.parse.urlencode({'file': step.file, 'demo': step.demo, 'step': asked})}")
    error = page.locator("#step-error")
    error.wait_for(state="visible", timeout=30_000)
    text = error.inner_text()
    assert f"step={asked} {says}" in text and f"step=0 to step={step.steps - 1}" in text, text
    assert page.locator("#frame").is_hidden()  # no other step stands in for the one asked for
    assert page.locator("#frame[data-step]").count() == 0
    assert page.locator("#step-label").inner_text() == "no step"
    page.keyboard.press("ArrowRight")  # from there the keys start at the first step
    wait_step(page, 0)
    assert error.is_hidden() and "step=0" in page.url


def test_a_lone_shard_copied_to_an_empty_folder_is_served(steps, build, tmp_path, page):
    step = first(steps, "CLICK", (1, 1, 0, 0), (800, 1280))
    lone = tmp_path / "download" / Path(step.file).name
    lone.parent.mkdir()
    shutil.copy(build / step.file, lone)
    served = serve(lone)
    try:
        page.goto(served.url)
        page.wait_for_selector("#demo-list[data-ready] tbody tr")
        assert {r.get_attribute("data-file") for r in page.locator("#demo-list tbody tr").all()} == {
            lone.name
        }
        moved = replace(step, file=lone.name)
        open_step(page, served.url, moved)
        assert_geometry(page, moved)
        page.screenshot(path=ARTIFACTS / "5-lone-shard.png")
    finally:
        stop(served)


def test_the_html_export_keeps_the_contract_from_file_urls(steps, build, tmp_path, page):
    wanted = [
        first(steps, "CLICK", (1, 1, 0, 0), (1080, 1280)),
        first(steps, "DRAG", (1, 1, 1, 1)),
        next(s for s in steps if s.type == "TYPE" and s.mask == (0, 0, 0, 0)),
    ]
    out = tmp_path / "export" / "viewer.html"
    demos = ",".join(sorted({f"{s.file}:{s.demo}" for s in wanted}))
    r = subprocess.run(
        [str(GUI_ASSETS), "view", str(build), "--html", str(out), "--demos", demos],
        capture_output=True, text=True, env=clean_env(), timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "/api/" not in out.read_text(encoding="utf-8").split('id="viewer-data"')[1].split("</script>")[0]
    page.goto(out.as_uri())
    page.wait_for_selector("#demo-list[data-ready] tbody tr")
    assert page.locator("#demo-list tbody tr").count() == len(demos.split(","))
    for step in wanted:
        page.goto(f"{out.as_uri()}?{step.query}")
        wait_step(page, step.t)
        assert_geometry(page, step)
        zoom(page, "2")
        assert_geometry(page, step)
    drag_demo = [s for s in steps if (s.file, s.demo) == (wanted[1].file, wanted[1].demo)]
    page.goto(f"{out.as_uri()}?{drag_demo[0].query}")
    wait_step(page, 0)
    for s in drag_demo[1:3]:
        page.keyboard.press("ArrowRight")
        wait_step(page, s.t)
        assert_geometry(page, s)
    page.screenshot(path=ARTIFACTS / "6-html-export.png")


# --- the server without a browser -------------------------------------------------------------


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_client_paths_stay_under_the_served_root(server, steps):
    step = steps[0]
    frame = f"{server.url}api/frame?demo={step.demo}&step=0&file="
    assert get(frame + urllib.parse.quote("../" + step.file))[0] == 400
    assert get(frame + urllib.parse.quote("/etc/passwd"))[0] == 400
    assert get(frame + urllib.parse.quote("mind2web_train/missing_0000.hdf5"))[0] == 404
    assert get(frame + urllib.parse.quote("_work/hash_cache.json"))[0] == 404
    assert (
        get(f"{server.url}api/frame?file={urllib.parse.quote(step.file)}&demo={step.demo}&step=x")[0] == 400
    )
    assert get(f"{server.url}api/frame?file={urllib.parse.quote(step.file)}&demo=demo_99&step=0")[0] == 404
    past = f"{server.url}api/frame?file={urllib.parse.quote(step.file)}&demo={step.demo}&step={step.steps}"
    assert get(past)[0] == 404
    assert get(f"{server.url}static/..%2Fcatalog.py")[0] == 404


def test_a_served_frame_is_the_stored_frame_pixel_for_pixel(server, steps, build):
    step = first(steps, "SCROLL", (1, 1, 1, 1), (800, 1280))
    for kind, dataset in (("agentview", "obs/agentview_rgb"), ("eye", "obs/eye_in_hand_rgb")):
        q = urllib.parse.urlencode({"file": step.file, "demo": step.demo, "step": step.t, "kind": kind})
        status, body = get(f"{server.url}api/frame?{q}")
        assert status == 200 and body.startswith(b"\x89PNG")
        with h5py.File(build / step.file, "r") as f:
            want = f[f"data/{step.demo}/{dataset}"][step.t]
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(body))), want)


def test_the_demo_api_gives_the_shards_arrays(server, steps, build):
    step = first(steps, "DRAG", (1, 1, 1, 1))
    status, body = get(
        f"{server.url}api/demo?{urllib.parse.urlencode({'file': step.file, 'demo': step.demo})}"
    )
    assert status == 200
    demo = json.loads(body)
    with h5py.File(build / step.file, "r") as f:
        d = f[f"data/{step.demo}"]
        assert demo["types"] == d["action_type"][:].tolist()
        np.testing.assert_array_equal(np.asarray(demo["params"], np.float32), d["action_params"][:])
        np.testing.assert_array_equal(np.asarray(demo["eye_rect"], np.float32), d["eye_rect"][:])
        assert demo["texts"] == [t.decode() for t in d["action_text"][:]]
        assert demo["source_ref"] == json.loads(d.attrs["source_ref"])
        assert demo["frames"]["agentview"] == list(d["obs/agentview_rgb"].shape[:3])
    assert demo["problems"] == []


# --- the pieces -------------------------------------------------------------------------------


def test_the_index_reads_no_frame(build, monkeypatch):
    """Attributes and small datasets only: a 500 MB shard's list costs no frame read."""
    read: list[str] = []
    original = h5py.Dataset.__getitem__

    def recording(self: h5py.Dataset, key: Any) -> Any:
        read.append(self.name)
        return original(self, key)

    monkeypatch.setattr(h5py.Dataset, "__getitem__", recording)
    entry = read_file_index(build / "cuagym_browser_use" / "cuagym_browser_use_0000.hdf5")
    assert entry["demos"] and read
    assert not [name for name in read if "/obs/" in name], read


def test_the_served_root_and_its_shards(build, tmp_path):
    shard = build / "mind2web_train" / "mind2web_train_0000.hdf5"
    assert ServedRoot.from_paths([shard]).root == shard.parent
    both = ServedRoot.from_paths([shard, build / "cuagym_browser_use"])
    assert both.root == build
    files = both.shard_files()
    assert files[0] == "cuagym_browser_use/cuagym_browser_use_0000.hdf5" and "_work" not in "".join(files)
    with pytest.raises(BadPath):
        both.resolve("../x.hdf5")
    with pytest.raises(NotServed):
        both.resolve("pango_sample/pango_sample_0000.hdf5")
    built = tmp_path / "out"  # a build root: its `_work` area and `hub/` copy are not served
    for rel in ("d/d_0000.hdf5", "hub/d/d_0000.hdf5", "_work/d/piece_0000.hdf5", ".cache/x.hdf5"):
        (built / rel).parent.mkdir(parents=True, exist_ok=True)
        (built / rel).touch()
    assert ServedRoot.from_paths([built]).shard_files() == ["d/d_0000.hdf5"]
    assert ServedRoot.from_paths([built / "hub"]).shard_files() == ["d/d_0000.hdf5"]
    broken = tmp_path / "broken_0000.hdf5"
    broken.write_bytes(b"not an hdf5 file")
    (entry,) = Catalog(ServedRoot.from_paths([broken])).index()["files"]
    assert "h5py cannot open" in entry["error"] and entry["demos"] == []


@pytest.mark.parametrize("shape", [(7, 5, 3), (6, 9, 4), (4, 3), (1, 1, 1)])
def test_png_encoding_is_lossless(shape):
    pixels = np.random.default_rng(0).integers(0, 256, size=shape, dtype=np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(encode_png(pixels))))
    np.testing.assert_array_equal(decoded.reshape(pixels.shape), pixels)


def test_viewer_command_names_the_directory():
    assert viewer_command(Path("/data/out/mind2web_train")) == "gui-assets view /data/out/mind2web_train"
    assert viewer_command(Path("/a b/c")) == "gui-assets view '/a b/c'"


def test_the_viewer_imports_neither_dagster_nor_the_writers():
    """It reads shards as any user does: never through the code that wrote them."""
    package = REPO / "gui_assets" / "viewer"
    for path in package.rglob("*.py"):
        for name in imported_names(path):
            assert not name.startswith(("dagster", "gui_assets.publish", "gui_assets.defs")), (path, name)


def test_starting_the_viewer_loads_neither_dagster_nor_the_writers():
    modules = "gui_assets.cli, gui_assets.viewer, gui_assets.viewer.server, gui_assets.viewer.export"
    probe = (
        f"import sys, {modules}\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] == 'dagster' or m.startswith('gui_assets.publish')))"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=clean_env(), check=True
    )
    assert r.stdout.strip() == "[]", r.stdout
