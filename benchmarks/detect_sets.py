"""Independent labelled sets for entity detection (used by ``compare_presidio.py``).

Each item is ``(text, gold, meta)``: gold = list of ``(start, end, type)`` with
type in NAME, ADDRESS, PHONE, DATE, EMAIL, ID, MEDICAL or OTHER (organisations,
places, URLs …: gold for precision, outside the targets); meta = ``{"set",
"casing", "locale"}``. Every set is split in two by ``part``: ``dev`` and
``held`` use different seeds and disjoint halves of the templates, so the
held-out part holds sentence frames the detectors were never looked at on.

* ``templates``: templates written for this benchmark, values from Faker in ten
  Latin-script locales; names alone, in full, with titles and initials;
  medical conditions from a hand-written list (not WordNet).
* ``real``: sentences of the project's tweets, wiki and news sets with values
  from ``mimesis`` (another generator, its own locales) written in at random
  word boundaries.
* ``presidio``: presidio-evaluator's own 209 templates (from its wheel) filled
  from its FakeNameGenerator.com table (3,000 people of 30 name sets), neither
  of which this project wrote.

``held2`` to ``held5`` are further held-out parts: the held part's sentence
frames and sentences with fresh seeds (new values, casings, insert positions),
made because ``held`` (then ``held2``, ``held3``, ``held4``) had been run several times.

A fourth set, ``world`` (``detect_world.py``), has frames of its own and values from Faker
locales no other set uses.

Casing: 60 % as written, 20 % lower case, 20 % upper case (the whole sentence).
"""

from __future__ import annotations

import csv
import random
import re
from pathlib import Path

_SEEDS = {"dev": 1, "held": 2, "held2": 3, "held3": 4, "held4": 5, "held5": 6}
FAKER_LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pl_PL", "pt_BR", "tr_TR")
MIMESIS_LOCALES = ("en", "en-gb", "de", "fr", "es", "it", "nl", "pl", "pt-br", "cs", "sv", "da")
CONDITIONS = ["asthma", "type 2 diabetes", "hypertension", "bipolar disorder", "schizophrenia", "HIV", "AIDS",
              "hepatitis B", "tuberculosis", "epilepsy", "migraine", "glaucoma", "psoriasis", "lupus", "gout",
              "leukemia", "breast cancer", "prostate cancer", "Crohn's disease", "celiac disease", "anorexia",
              "bulimia", "multiple sclerosis", "Alzheimer's disease", "Parkinson's disease", "dementia",
              "osteoporosis", "arthritis", "endometriosis", "pneumonia", "bronchitis", "malaria", "measles",
              "shingles", "scoliosis", "anemia", "hypothyroidism", "cirrhosis", "insomnia", "autism"]
TEMPLATES = [
    "{NAME} was admitted with {MEDICAL} on {DATE}.", "Can you ask {FIRST} to call me back on {PHONE}?",
    "I'm writing on behalf of {TITLE} {LAST} regarding account {KID}.", "Her new address is {ADDRESS}.",
    "Send the invoice to {EMAIL} and copy {NAME}.", "{INITIAL} {LAST} lives at {ADDRESS} since {DATE}.",
    "My ID number is {ID} and my phone is {PHONE}.", "Reminder: {FIRST} has {MEDICAL}, keep the pills ready.",
    "born {DATE}, {NAME} moved to {ADDRESS}", "text me at {PHONE} or write to {EMAIL} - {FIRST}",
    "The tenant, {NAME}, reported the leak on {DATE}.", "{TITLE} {NAME} confirmed {MEDICAL} after the scan.",
    "Passport {ID} belongs to {NAME}.", "we stayed with {FIRST} and {FIRST} at {ADDRESS} last summer",
    "Delivery for {LAST} at {ADDRESS}, call {PHONE} on arrival.", "{NAME}'s email changed to {EMAIL} on {DATE}.",
    "Is {MEDICAL} covered by the plan for {NAME}?", "Thanks {FIRST}! See you on {DATE}.",
    "Member {KID} ({NAME}) missed the {DATE} appointment.", "Her doctor said the {MEDICAL} is under control.",
]


def _casing(rnd: random.Random, text: str) -> tuple[str, str]:
    r = rnd.random()
    if r < 0.2:
        return text.lower(), "lower"
    if r < 0.4:
        return text.upper(), "upper"
    return text, "as written"


def _recase(text, gold, casing):
    if casing == "as written":
        return text, gold
    new = text.lower() if casing == "lower" else text.upper()
    if len(new) != len(text):  # a character whose case changes length (ß): keep as written
        return text, gold
    return new, gold


def _fill(parts, rnd, meta):
    text, gold = "", []
    for kind, val in parts:
        if kind is not None and val:
            gold.append((len(text), len(text) + len(val), kind))
        text += val
    casing = _casing(rnd, "")[1]
    text, gold = _recase(text, gold, casing)
    return text, gold, dict(meta, casing=casing)


def _template_parts(tpl):
    return re.split(r"(\{[A-Z]+\})", tpl)


def template_set(n: int, part: str = "dev"):
    from faker import Faker

    seed = _SEEDS[part]
    rnd = random.Random(seed)
    fakers = {loc: Faker(loc) for loc in FAKER_LOCALES}
    for i, f in enumerate(fakers.values()):
        f.seed_instance(seed * 100 + i)
    tpls = TEMPLATES[0::2] if part == "dev" else TEMPLATES[1::2]  # the held parts share the held-out frames
    fmts = ["%B %d, %Y", "%d %b %Y", "%d/%m/%Y", "%Y-%m-%d", "%b %d", "%d %B", "%m/%d/%y", "%A %d %B %Y"]
    out = []
    for _ in range(n):
        loc = rnd.choice(FAKER_LOCALES)
        fk = fakers[loc]
        vals = {
            "NAME": lambda: ("NAME", f"{fk.first_name()} {fk.last_name()}"),
            "FIRST": lambda: ("NAME", fk.first_name()), "LAST": lambda: ("NAME", fk.last_name()),
            "INITIAL": lambda: ("NAME", fk.first_name()[0] + "."),
            "TITLE": lambda: (None, rnd.choice(["Mr.", "Mrs", "Dr.", "Ms", "Prof."])),
            "ADDRESS": lambda: ("ADDRESS", fk.address().replace("\n", ", ")),
            "PHONE": lambda: ("PHONE", fk.phone_number()), "EMAIL": lambda: ("EMAIL", fk.email()),
            "DATE": lambda: ("DATE", fk.date_between("-80y", "+1y").strftime(rnd.choice(fmts))),
            "ID": lambda: ("ID", rnd.choice([fk.bothify("??#######").upper(), fk.bothify("#########"),
                                              fk.bothify("###-##-####")])),
            "KID": lambda: ("ID", fk.bothify(rnd.choice(["#######", "??-#####", "########"]))),
            "MEDICAL": lambda: ("MEDICAL", rnd.choice(CONDITIONS)),
        }
        parts = [vals[p[1:-1]]() if p.startswith("{") else (None, p) for p in _template_parts(rnd.choice(tpls))]
        out.append(_fill(parts, rnd, {"set": "templates", "locale": loc}))
    return out


SPLIT_SEED = 12  # every part splits the corpus sentences alike: dev draws from one half, the held parts the other


def sentence_half(part: str, rnd: random.Random) -> list[str]:
    """The tweets, wiki and news sentences of 8 to 40 words, shuffled by ``rnd`` (seeded with :data:`SPLIT_SEED`):
    the first half for ``dev``, the second, which no ``dev`` draw reaches, for the held parts."""
    from dptext.data import get_dataset

    sents = []
    for name in ("tweets", "wiki", "news"):
        for doc in get_dataset(name).corpus():
            sents.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", doc) if 8 <= len(s.split()) <= 40)
    rnd.shuffle(sents)
    return sents[: len(sents) // 2] if part == "dev" else sents[len(sents) // 2:]


def real_set(n: int, part: str = "dev"):
    from mimesis import Address, Datetime, Person
    from mimesis.locales import Locale

    seed = 10 + _SEEDS[part]
    rnd = random.Random(SPLIT_SEED)
    sents = sentence_half(part, rnd)
    if seed != SPLIT_SEED:  # fresh draws from the same half (dev: its own half)
        rnd = random.Random(seed)
        rnd.shuffle(sents)
    gens = {}
    for loc in MIMESIS_LOCALES:
        lc = Locale(loc)
        gens[loc] = (Person(lc, seed=seed), Address(lc, seed=seed), Datetime(lc, seed=seed))
    out = []
    for k in range(n):
        loc = rnd.choice(MIMESIS_LOCALES)
        p, a, d = gens[loc]
        choices = [("NAME", p.full_name), ("NAME", p.first_name), ("NAME", p.last_name), ("PHONE", p.phone_number),
                   ("EMAIL", p.email), ("ADDRESS", lambda: f"{a.address()}, {a.postal_code()} {a.city()}"),
                   ("DATE", lambda: d.date().strftime(rnd.choice(["%d %B %Y", "%B %d, %Y", "%d.%m.%Y", "%Y-%m-%d"]))),
                   ("ID", lambda: p.identifier(mask=rnd.choice(["##-##/##", "@@######", "#########"])))]
        words = sents[k % len(sents)].split(" ")
        inserts = sorted(rnd.sample(range(len(words) + 1), rnd.choice([1, 2])))
        parts, prev = [], 0
        for pos in inserts:
            kind, fn = rnd.choice(choices)
            parts.append((None, " ".join(words[prev:pos]) + (" " if pos else "")))
            parts.append((kind, str(fn())))
            parts.append((None, " " if pos < len(words) else ""))
            prev = pos
        parts.append((None, " ".join(words[prev:])))
        out.append(_fill(parts, rnd, {"set": "real", "locale": loc}))
    return out


_PE_MAP = {  # presidio-evaluator placeholder -> (gold type, FakeNameGenerator column or builder)
    "person": "NAME", "name": "NAME", "name_female": "NAME", "name_male": "NAME", "first_name": "NAME",
    "first_name_male": "NAME", "first_name_female": "NAME", "first_name_nonbinary": "NAME", "last_name": "NAME",
    "last_name_male": "NAME", "last_name_female": "NAME", "address": "ADDRESS", "street_name": "ADDRESS",
    "building_number": "ADDRESS", "secondary_address": "ADDRESS", "postcode": "ADDRESS", "zipcode": "ADDRESS",
    "phone_number": "PHONE", "email": "EMAIL", "credit_card_number": "ID", "iban": "ID", "ssn": "ID",
    "us_driver_license": "ID", "date_of_birth": "DATE", "date_time": "DATE",
}


def _luhn_number(rnd, n=16):
    digits = [rnd.randrange(10) for _ in range(n - 1)]
    total = sum((d * 2 - 9 if d > 4 else d * 2) if i % 2 == 0 else d for i, d in enumerate(reversed(digits)))
    return "".join(map(str, digits)) + str((10 - total % 10) % 10)


def _iban(rnd):
    bban = "".join(str(rnd.randrange(10)) for _ in range(18))
    check = 98 - int("".join(str(int(c, 36)) for c in bban + "DE00")) % 97
    return f"DE{check:02d}{bban}"


def presidio_set(n: int, part: str, data_dir: Path):
    seed = 20 + _SEEDS[part]
    rnd = random.Random(seed)
    tpls = [t.strip().lstrip("\ufeff").replace("\\n", "\n") for t in (data_dir / "templates.txt").read_text(encoding="utf-8").splitlines()]
    tpls = [t for t in tpls if "{{" in t]
    tpls = tpls[0::2] if part == "dev" else tpls[1::2]
    with open(data_dir / "FakeNameGenerator.com_3000.csv", encoding="utf-8-sig") as fh:
        people = list(csv.DictReader(fh))
    licences = (data_dir / "us_driver_licenses.csv").read_text(encoding="utf-8").split()[1:]
    out = []
    for _ in range(n):
        r = rnd.choice(people)
        street = r["StreetAddress"]
        num, _, sname = street.partition(" ") if street[:1].isdigit() else ("", "", street)
        vals = {
            "person": f"{r['GivenName']} {r['Surname']}", "first_name": r["GivenName"], "last_name": r["Surname"],
            "address": f"{street}, {r['City']}, {r['State']} {r['ZipCode']}", "street_name": sname,
            "building_number": num or str(rnd.randrange(1, 999)), "secondary_address": f"Apt. {rnd.randrange(1, 999)}",
            "postcode": r["ZipCode"], "zipcode": r["ZipCode"], "phone_number": r["TelephoneNumber"],
            "email": r["EmailAddress"], "credit_card_number": _luhn_number(rnd), "iban": _iban(rnd),
            "ssn": r["NationalID"] or f"{rnd.randrange(100, 900)}-{rnd.randrange(10, 99)}-{rnd.randrange(1000, 9999)}",
            "us_driver_license": rnd.choice(licences), "date_of_birth": r["Birthday"],
            "date_time": r["Birthday"] + f" {rnd.randrange(24):02d}:{rnd.randrange(60):02d}",
            "city": r["City"], "country": r["CountryFull"], "state_abbr": r["State"], "organization": r["Company"],
            "job": r["Occupation"], "age": r["Age"], "year": r["Birthday"][-4:], "url": "https://" + r["Domain"],
            "prefix": r["Title"], "prefix_male": r["Title"], "prefix_female": r["Title"],
            "ip_address": ".".join(str(rnd.randrange(1, 255)) for _ in range(4)),
        }
        parts = []
        for p in re.split(r"(\{\{[a-z_]+\}\})", rnd.choice(tpls)):
            key = p[2:-2] if p.startswith("{{") else None
            if key is None:
                parts.append((None, p))
                continue
            base = re.sub(r"_(male|female|nonbinary)$", "", key)
            base = {"name": "person", "name_female": "person", "name_male": "person"}.get(key, base)
            val = vals.get(key, vals.get(base, ""))
            kind = _PE_MAP.get(key) or ("OTHER" if val and not key.startswith("prefix") else None)
            parts.append((kind, val))
        out.append(_fill(parts, rnd, {"set": "presidio", "locale": r["NameSet"]}))
    return out


def build(n: int, part: str, pe_dir: Path | None):
    """The four sets' ``part`` (``n`` sentences each), or a hand-labelled part alone (``hand``, ``hand2``)."""
    from detect_world import world_set

    if part.startswith("hand"):
        from detect_hand import hand_set

        return {part: hand_set(part)}
    sets = {"templates": template_set(n, part), "real": real_set(n, part)}
    if pe_dir is not None and (pe_dir / "templates.txt").exists():
        sets["presidio"] = presidio_set(n, part, pe_dir)
    sets["world"] = world_set(n, part, 30 + _SEEDS[part])
    return sets
