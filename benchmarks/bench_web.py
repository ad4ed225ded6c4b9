"""Playground timings: page load in headless Chromium and /api/perturb p50 for a 100-word text."""
import os, statistics, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
sys.path.insert(0, os.environ.get("TESTS_DIR", "tests"))
import httpx
from test_web_api import serve_app
from dptext.web.app import create_app

WORDS = ("the committee met on tuesday to review the budget for the new hospital wing several members raised "
         "concerns about rising construction costs and delays my doctor said the test results were normal but "
         "she wants to see me again in march we walked along the river after dinner and talked about moving to "
         "a smaller town the film was slow at first yet the final scenes were beautiful and surprisingly moving "
         "please send the signed contract to our office before friday so payment can be processed").split()
TEXT = " ".join((WORDS * 2)[:100]) + "."
assert len(TEXT.split()) == 100

with serve_app(create_app()) as base, httpx.Client(base_url=base, timeout=600) as c:
    for mech in sys.argv[1:] or ["rantext", "santext", "custext+"]:
        body = {"mechanism": mech, "epsilon": 3, "text": TEXT}
        t0 = time.perf_counter(); c.post("/api/perturb", json=body).raise_for_status(); first = time.perf_counter() - t0
        times = []
        for _ in range(30):
            t0 = time.perf_counter(); c.post("/api/perturb", json=body).raise_for_status(); times.append(time.perf_counter() - t0)
        print(f"/api/perturb {mech:9s} 100 words: first {first*1000:.0f} ms (build), p50 {statistics.median(times)*1000:.1f} ms, "
              f"p90 {sorted(times)[26]*1000:.1f} ms over 30")
    from selenium import webdriver
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=webdriver.ChromeService(executable_path="/usr/bin/chromedriver"), options=opts)
    loads = []
    for _ in range(5):
        t0 = time.perf_counter(); drv.get(base + "/")
        while drv.execute_script("return document.body.dataset.ready") != "1":
            time.sleep(0.005)
        loads.append(time.perf_counter() - t0)
        nav = drv.execute_script("const n = performance.getEntriesByType('navigation')[0]; return [n.domContentLoadedEventEnd, n.loadEventEnd]")
    drv.quit()
    print(f"page load to ready (controls filled from /api/mechanisms): median {statistics.median(loads)*1000:.0f} ms over 5; "
          f"last: DOMContentLoaded {nav[0]:.0f} ms, load {nav[1]:.0f} ms")
