"""The playground and the dashboard in a real browser (Chromium driven by Selenium).

Each test drives the page as a person would (type, slide ε, click, hover) and checks what is on
screen against the JSON API called directly with the same settings and seed. Screenshots go to
the test's temporary folder. Skipped only where Chromium or its driver is not installed.
"""

from __future__ import annotations

import shutil
import time

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
selenium = pytest.importorskip("selenium", reason="selenium is not installed (pip install selenium)")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from web_fixtures import api, base, client, dashboard_app, serve_app  # noqa: E402,F401

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [pytest.mark.system_package("chromium", "chromium-driver"),  # a skip fails in CI (conftest.py)
              pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="Chromium and chromedriver are not installed "
                                 "(apt-get install -y chromium chromium-driver)")]
TEXT = "My doctor said the test results were normal, but she wants to see me again in March."


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1200,1500", "--disable-background-networking", "--no-first-run"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=opts)
    drv.set_page_load_timeout(120)
    yield drv
    drv.quit()


def wait(drv, cond, timeout=300):
    return WebDriverWait(drv, timeout, poll_frequency=0.1).until(lambda d: cond(d))


def el(drv, css):
    return drv.find_element(By.CSS_SELECTOR, css)


def open_page(drv, base):
    start = time.perf_counter()
    drv.get(base + "/")
    wait(drv, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    return time.perf_counter() - start


def perturb_on_page(drv, text, eps, seed, mechanism="rantext"):
    before = drv.execute_script("return Number(document.body.dataset.perturbed || 0)")
    Select(el(drv, "#mechanism")).select_by_value(mechanism)
    box = el(drv, "#text")
    box.clear()
    box.send_keys(text)
    field = el(drv, "#epsilon")
    field.clear()
    field.send_keys(str(eps))
    seed_box = el(drv, "#seed")
    seed_box.clear()
    seed_box.send_keys(str(seed))
    el(drv, "#perturb").click()
    wait(drv, lambda d: d.execute_script("return Number(document.body.dataset.perturbed || 0)") > before
         or el(d, "#error").is_displayed())


def test_perturb_hover_and_twenty_runs_match_the_api(browser, base, api, tmp_path):
    load_s = open_page(browser, base)
    print(f"\npage load (DOMContentLoaded + /api/mechanisms): {load_s * 1000:.0f} ms")
    names = [o.get_attribute("value") for o in Select(el(browser, "#mechanism")).options]
    assert names == [m["name"] for m in api.get("/api/mechanisms").json()["mechanisms"]]
    # the entity policy selector is there exactly when the policies are installed
    assert el(browser, "#policy-box").is_displayed() == (api.get("/api/mechanisms").json()["policies"] is not None)
    # the slider moves the number field
    slider = el(browser, "#eps-slider")
    browser.execute_script("arguments[0].value = 6; arguments[0].dispatchEvent(new Event('input'))", slider)
    assert el(browser, "#epsilon").get_attribute("value") == "6"

    perturb_on_page(browser, TEXT, 5, 42, mechanism="santext")
    expect = api.post("/api/perturb", json={"mechanism": "santext", "epsilon": 5, "oov": "drop", "text": TEXT,
                                            "seed": 42}).json()
    for side, key in (("original", "original"), ("perturbed", "output")):
        spans = browser.find_elements(By.CSS_SELECTOR, f"#{side} .unit")
        assert [s.text for s in spans] == [u[key] if u[key] is not None else u["original"] for u in expect["units"]]
        assert [s.get_attribute("class").split()[1] for s in spans] == [u["class"] for u in expect["units"]]
    assert el(browser, "#rep-counts").text.startswith(f"{expect['privacy']['counts']['perturbed']} perturbed")
    assert el(browser, "#rep-scope").text == expect["privacy"]["scope"]

    # hover the first sampled unit: the tooltip lists the API's top-5 with its probabilities
    i = next(k for k, u in enumerate(expect["units"]) if u["sampled"])
    unit = el(browser, f"#original .unit[data-i='{i}']")
    ActionChains(browser).move_to_element(unit).perform()
    wait(browser, lambda d: el(d, "#tooltip").get_attribute("data-loaded") == "1"
         and el(d, "#tooltip").get_attribute("data-i") == str(i))
    row = api.post("/api/transition", json={"mechanism": "santext", "epsilon": 5, "context": TEXT,
                                            "position": expect["units"][i]["pos"], "top": 5}).json()
    items = browser.find_elements(By.CSS_SELECTOR, "#top5 li")
    assert [li.find_element(By.CSS_SELECTOR, ".name").text for li in items] == [t["unit"] for t in row["top"]]
    shown = [li.find_element(By.CSS_SELECTOR, ".prob").text for li in items]
    assert shown == [f"{100 * t['prob']:.2f} %" if t["prob"] >= 1e-4 else "<0.01 %" for t in row["top"]]
    browser.save_screenshot(str(tmp_path / "playground-hover.png"))

    # twenty runs at the same seed: the table is the API's answer
    el(browser, "#run20").click()
    wait(browser, lambda d: el(d, "#runs-box").get_attribute("data-runs") == "20")
    runs = api.post("/api/runs", json={"mechanism": "santext", "epsilon": 5, "oov": "drop", "text": TEXT,
                                       "n": 20, "seed": 42}).json()
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    assert len(rows) == len(runs["units"])
    for tr, u in zip(rows, runs["units"]):
        cells = tr.find_elements(By.TAG_NAME, "td")
        assert cells[0].text == u["original"] and cells[1].text == f"{u['survived']}/20"
        assert cells[2].text.startswith(", ".join(f"{o} ×{c}" for o, c in u["outputs"]))

    # the retention plot: one dot per ε in 1..16 at the API's values
    wait(browser, lambda d: el(d, "#retention-box").get_attribute("data-ready") == "1")
    curve = api.post("/api/retention", json={"mechanism": "santext", "epsilon": 5, "oov": "drop", "text": TEXT,
                                             "seed": 42}).json()
    dots = browser.find_elements(By.CSS_SELECTOR, "#retention circle.dot")
    assert [float(d.get_attribute("data-x")) for d in dots] == curve["epsilons"]
    assert [float(d.get_attribute("data-y")) for d in dots] == pytest.approx(curve["retention"])
    browser.save_screenshot(str(tmp_path / "playground.png"))


@pytest.mark.parametrize("what,text,eps,words", [
    ("empty text", "   ", 3, "the text is empty"),
    ("ε = 0", TEXT, 0, "ε must be greater than 0"),
    ("empty ε", TEXT, "", "ε is required"),
    ("1 MB paste", None, 3, "at most 256 KB"),
])
def test_bad_input_shows_the_server_message_on_the_page(browser, base, what, text, eps, words, tmp_path):
    open_page(browser, base)
    perturb_on_page(browser, TEXT, 3, 1)  # a good result first: the bad input must clear it
    assert browser.find_elements(By.CSS_SELECTOR, "#perturbed .unit") and el(browser, "#report-box").is_displayed()
    if text is None:  # a 1 MB paste: set the value at once (typing a megabyte would take minutes)
        browser.execute_script("document.getElementById('text').value = 'word '.repeat(200000)")
        field = el(browser, "#epsilon")
        field.clear()
        field.send_keys(str(eps))
        el(browser, "#perturb").click()
    else:
        perturb_on_page(browser, text, eps, 1)
    wait(browser, lambda d: el(d, "#error").is_displayed(), timeout=60)
    assert words in el(browser, "#error").text
    invalid = {"empty text": "#text", "ε = 0": "#epsilon", "empty ε": "#epsilon", "1 MB paste": "#text"}[what]
    assert "invalid" in el(browser, invalid).get_attribute("class")
    assert not browser.find_elements(By.CSS_SELECTOR, "#perturbed .unit")
    assert not el(browser, "#report-box").is_displayed()
    browser.save_screenshot(str(tmp_path / "bad-input.png"))


def test_a_refused_request_leaves_no_stale_retention_chart(browser, monkeypatch, tmp_path):
    """The retention curve of the last good text arrives after a 413 for a later paste: it is not drawn."""
    import threading

    import dptext.web.app as webapp

    real, gate = webapp.retention_curve, threading.Event()

    def held(*args, **kwargs):  # the curve is computed only once the refusal is on screen
        gate.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(webapp, "retention_curve", held)
    with serve_app(webapp.create_app()) as url:
        open_page(browser, url)
        perturb_on_page(browser, TEXT, 3, 1, mechanism="santext")
        assert el(browser, "#report-box").is_displayed()
        assert browser.execute_script("return document.body.dataset.retentionPending") == "1"
        browser.execute_script("document.getElementById('text').value = 'word '.repeat(200000)")
        el(browser, "#perturb").click()
        wait(browser, lambda d: el(d, "#error").is_displayed(), timeout=60)
        assert "at most 256 KB" in el(browser, "#error").text
        gate.set()
        wait(browser, lambda d: d.execute_script("return document.body.dataset.retentionPending") == "0", 120)
        assert not el(browser, "#retention-box").is_displayed()
        assert not browser.find_elements(By.CSS_SELECTOR, "#retention *")
        browser.save_screenshot(str(tmp_path / "after-413.png"))


def test_dashboard_asks_for_a_key_then_shows_keys_and_epsilon_lines(browser, tmp_path):
    from test_web_api import fake_snapshot

    with serve_app(dashboard_app(key="secret")) as url:
        browser.get(url + "/admin/dashboard")
        wait(browser, lambda d: el(d, "#auth").is_displayed(), timeout=60)
        assert "needs an API key" in el(browser, "#error").text
        el(browser, "#key").send_keys("secret")
        el(browser, "#auth button").click()
        wait(browser, lambda d: d.execute_script("return Number(document.body.dataset.loaded || 0)") > 0, 60)
        snap = fake_snapshot()
        rows = browser.find_elements(By.CSS_SELECTOR, "#keys tbody tr")
        assert [r.get_attribute("data-key") for r in rows] == sorted(snap["keys"])
        alice = [td.text for td in rows[0].find_elements(By.TAG_NAME, "td")]
        assert alice == ["alice", "12", "1", "8.5 ms", "21.0 ms", "42.00"]
        lines = browser.find_elements(By.CSS_SELECTOR, "#epsilon-chart polyline")
        assert sorted(p.get_attribute("data-series") for p in lines) == ["alice", "bob"]
        dots = browser.find_elements(By.CSS_SELECTOR, "#epsilon-chart circle[data-series='alice']")
        assert [float(d.get_attribute("data-y")) for d in dots] == [12.0, 42.0]
        assert el(browser, "#setting-mechanism").text == "rantext"
        assert el(browser, "#setting-policy").text == "all (every unit private)"  # not "–"
        browser.save_screenshot(str(tmp_path / "dashboard.png"))


def test_preset_balanced_shows_where_it_sits_on_the_guide(browser, base):
    """Choosing `balanced` fills the guide panel with docs/choosing.json's numbers at the preset's mechanism and
    rest ε (policy tiered): retention and the accuracy of each classifier task (sentiment, topic)."""
    import json
    from pathlib import Path

    from dptext.privacy.presets import PRESETS

    doc = json.loads((Path(__file__).resolve().parents[1] / "docs" / "choosing.json").read_text("utf-8"))
    bal = PRESETS["balanced"]
    cell = next(v for e, v in doc["rows"][bal.spec.mechanism]["rest"].items() if float(e) == bal.spec.epsilon)
    open_page(browser, base)
    wait(browser, lambda d: d.execute_script("return document.body.dataset.guide === '1'"), timeout=30)
    Select(el(browser, "#preset")).select_by_value("balanced")
    assert el(browser, "#guide-eps").text == f"{bal.spec.epsilon:g}"
    assert el(browser, "#guide-retention").text == f"{cell['content_retention']:.3f}"
    for task in ("sentiment", "topic"):
        assert el(browser, f"#guide-accuracy-{task}").text == f"{cell['accuracy'][task]:.3f}"
    assert "docs/choosing.md in the dptext repository" in el(browser, "#guide-where").text
    assert el(browser, "#guide-spark svg line.mark") is not None
    # a setting the sweep did not measure is said plainly
    Select(el(browser, "#mechanism")).select_by_value("cape")
    browser.execute_script("document.getElementById('mechanism').dispatchEvent(new Event('change'))")
    assert "was not measured" in el(browser, "#guide-missing").text
