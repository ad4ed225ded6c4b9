"""A labelled frame set of its own for the pattern detectors: ADDRESS, PHONE, DATE, ID and EMAIL in every casing.

Ninety sentence frames written for this set in styles the other sets have little of: e-mail signatures, web
forms (``Phone: ...``), clinical notes, delivery notes, chat messages, invoices, HR records, police reports,
bank letters, tenancy forms, lists with semicolons, bracketed values, values that open or close a sentence or
stand next to another value. Slots are filled from Faker in 33 locales (and mimesis where it has the locale):

* ``{ADDRESS}``: a whole address, a street line, a street and town, UK-style lines with a postcode;
* ``{PHONE}``: the locale's own numbers, the same numbers re-written national, international, E.164 or
  without separators (``phonenumbers``), US 7-digit local numbers and UK mobiles;
* ``{DATE}``: a date in one of many written forms (``8 jun 1959``, ``June 8th, 1959``, ``08.06.59``,
  ``8th of June``, ``tues 3/4`` ...);
* ``{SSN}``, ``{NATID}`` (the locale's national number), ``{PASSPORT}``, ``{IBAN}``, ``{CARD}``, ``{PLATE}``
  and ``{ID}`` (any of them), all labelled ID; ``{EMAIL}``; ``{NAME}`` (labelled NAME, not scored).

Casing: 60 % as written, 20 % lower, 20 % upper. ``--part dev`` uses the frames at even positions with
``--seed`` (default 11), ``--part check`` those at odd positions with seed 29 unless given. Scored like
``compare_presidio.score`` (which it calls): ``clear`` is the share of non-space entity characters outside every detected span,
``full`` the share of entities with none left, ``prec`` the share of detected spans of a type overlapping any
labelled value (per type). ``--misses K`` prints up to K missed values per type and casing. ``--fp FILE`` instead runs the
policy over the ``wiki``, ``tweets`` (first 8000) and ``news`` corpora and writes the ADDRESS, PHONE, ID, DATE
and EMAIL spans to FILE; ``--fp-diff OLD NEW`` prints the counts of both and the spans only NEW has.

    PYTHONPATH=/work/bench-site:src python benchmarks/detect_frames3.py --part dev [--n 1500] [--misses 20]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sys
from collections import defaultdict

FRAMES = [
    "Best regards,\n{NAME}\nSenior Analyst\nT: {PHONE}\nE: {EMAIL}\n{ADDRESS}",
    "Phone: {PHONE}\nEmail: {EMAIL}\nDate of birth: {DATE}",
    "Pt seen {DATE}. DOB {DATE}. Lives at {ADDRESS} with daughter.",
    "Delivery note: leave parcel at side gate, {ADDRESS}. Driver to ring {PHONE} on arrival.",
    "hey its me, new number {PHONE} - save it",
    "Invoice date: {DATE}; due: {DATE}; bill to: {NAME}, {ADDRESS}",
    "Employee record - start date {DATE}, SSN {SSN}, home address {ADDRESS}.",
    "Suspect detained at {ADDRESS} on {DATE}; vehicle reg {PLATE}.",
    "Dear {NAME}, we write regarding account {IBAN}, opened on {DATE}.",
    "Tenant address: {ADDRESS}. Tenancy start: {DATE}. Deposit returned to {IBAN}.",
    "Contacts: {PHONE}; {PHONE}; {EMAIL}",
    "Emergency contact [{NAME}, {PHONE}]",
    "{ADDRESS} is where the incident happened.",
    "{PHONE} - that's the landlord.",
    "{DATE}: meeting with the auditors",
    "The form asked for my passport number ({PASSPORT}) and expiry ({DATE}).",
    "Ship to: {ADDRESS} | Tel. {PHONE} | Email {EMAIL}",
    "Paid with card {CARD} on {DATE}.",
    "please send the keys to {ADDRESS}, thanks!!",
    "Witness stated she lives at {ADDRESS} and can be reached on {PHONE}.",
    "Mobile: {PHONE}. Landline: {PHONE}.",
    "Registered office: {ADDRESS}. Company number {ID}.",
    "Ref. your letter of {DATE} concerning {NAME}.",
    "Admitted {DATE}, discharged {DATE}; follow-up call to {PHONE}.",
    "National ID: {NATID}",
    "His licence plate was {PLATE}, seen near {ADDRESS}.",
    "Transfer to IBAN {IBAN} (beneficiary {NAME}).",
    "Return address - {ADDRESS}",
    "Reached voicemail at {PHONE}, left message {DATE}.",
    "Name: {NAME} / Tel: {PHONE} / DOB: {DATE}",
    "The package was signed for at {ADDRESS}.",
    "Customer says card {CARD} was charged twice.",
    "SSN {SSN} does not match our records.",
    "DOB: {DATE} | Passport: {PASSPORT}",
    "We are moving to {ADDRESS} at the end of the month.",
    "Fax {PHONE} or write to {ADDRESS}.",
    "Reminder: dentist {DATE}",
    "lol call me {PHONE}",
    "Her personal number is {NATID} and her phone {PHONE}.",
    "Police report: on {DATE} officers attended {ADDRESS} after a call from {PHONE}.",
    "Bank details: {NAME}, {IBAN}",
    "Please update my address to {ADDRESS} and my email to {EMAIL}.",
    "Previous address (3 years): {ADDRESS}",
    "born {DATE} in a small village",
    "The vehicle, {PLATE}, is registered to {ADDRESS}.",
    "Order shipped {DATE} to {ADDRESS}; tracking sent to {EMAIL}.",
    "Whatsapp {PHONE} for details",
    "Contact {NAME} ({EMAIL}, {PHONE}) for access.",
    "Cardholder: {NAME}. Card: {CARD}.",
    "The ID on the file, {NATID}, belongs to someone else.",
    "Lease signed {DATE}, property at {ADDRESS}, rent paid from {IBAN}.",
    "Hi! Is {ADDRESS} still available for viewing?",
    "if lost please return to {ADDRESS} or phone {PHONE}",
    "Reported stolen: {PLATE}.",
    "Interview on {DATE}? Let me know at {EMAIL}.",
    "Postal address:\n{ADDRESS}\nTelephone:\n{PHONE}",
    "Attending: {NAME} (tel {PHONE})",
    "Expiry date {DATE}; passport {PASSPORT}.",
    "Her last known address was {ADDRESS}.",
    "Claim filed {DATE} under policy {ID}.",
    "Please quote your reference {ID} in all correspondence.",
    "{EMAIL} bounced, try {EMAIL}",
    "New patient: {NAME}, DOB {DATE}, tel {PHONE}, {ADDRESS}.",
    "Viewing booked for {DATE}. Address: {ADDRESS}.",
    "Payment received from card {CARD}, thank you.",
    "They sent it to {ADDRESS} instead of my office.",
    "My tax number is {NATID}.",
    "Phone ({PHONE}) and email ({EMAIL}) verified.",
    "Ph. {PHONE}",
    "Collected from {ADDRESS} by courier.",
    "Started {DATE}, left {DATE}.",
    "Driving licence no: {PASSPORT}",
    "The appointment on {DATE} was cancelled by {NAME}.",
    "Sender: {NAME}, {ADDRESS}, {PHONE}",
    "My new flat is {ADDRESS}!",
    "Reg {PLATE} clamped outside {ADDRESS}",
    "{DATE} - {NAME} called from {PHONE} about the leak at {ADDRESS}.",
    "Please find attached the statement for {IBAN}.",
    "Signed in the presence of a witness on {DATE}.",
    "Parcel for {NAME}\n{ADDRESS}",
    "Customer SSN: {SSN}; card on file: {CARD}.",
    "Temp. address until {DATE}: {ADDRESS}",
    "Text {PHONE} with your order number.",
    "Candidate {NAME}, passport {PASSPORT}, national id {NATID}.",
    "E-mail: {EMAIL}",
    "Guarantor lives at {ADDRESS}; phone {PHONE}; born {DATE}.",
    "{PLATE} was caught speeding on {DATE}.",
    "we met on {DATE} i think",
    "Cheque returned, account holder {NAME}, {ADDRESS}, sort code and IBAN {IBAN}.",
    "{ID}",
]
ADDRESS_LOCALES = ("en_US", "en_GB", "en_AU", "en_CA", "en_IE", "en_NZ", "en_IN", "en_PH", "de_DE", "de_AT", "de_CH",
                   "fr_FR", "fr_CA", "it_IT", "es_ES", "es_MX", "nl_NL", "nl_BE", "pt_BR", "pt_PT", "pl_PL", "sv_SE",
                   "da_DK", "no_NO", "fi_FI", "cs_CZ", "sk_SK", "hu_HU", "ro_RO", "hr_HR")
LOCALES = ADDRESS_LOCALES + ("ja_JP", "tr_TR", "el_GR")
MIMESIS = {"en_US": "en", "en_GB": "en-gb", "en_AU": "en-au", "en_CA": "en-ca", "de_DE": "de", "de_AT": "de-at",
           "de_CH": "de-ch", "fr_FR": "fr", "it_IT": "it", "es_ES": "es", "es_MX": "es-mx", "nl_NL": "nl",
           "nl_BE": "nl-be", "pt_BR": "pt-br", "pt_PT": "pt", "pl_PL": "pl", "sv_SE": "sv", "da_DK": "da", "no_NO": "no",
           "fi_FI": "fi", "cs_CZ": "cs", "sk_SK": "sk", "hu_HU": "hu", "hr_HR": "hr", "tr_TR": "tr"}
TYPES = ("ADDRESS", "PHONE", "DATE", "ID", "EMAIL")
OURS = {"ADDRESS": "ADDRESS", "PHONE": "PHONE", "DATE": "DATE", "EMAIL": "EMAIL", "ID": "ID", "CARD": "ID",
        "IBAN": "ID", "PERSON": "NAME"}
_UK_TYPES = ("Road", "Street", "Lane", "Close", "Avenue", "Drive", "Gardens", "Crescent", "Way", "Grove", "Mews",
             "Place", "Terrace", "Hill", "Row", "Walk", "Square", "Rd", "St", "Ave")
_US_TYPES = ("Rd", "St", "Ave", "Blvd", "Dr", "Ln", "Ct", "Pl", "Way", "Pkwy", "Cir", "Ter", "Road", "Street", "Drive")
_WEEKDAYS = ("mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun", "Monday", "Tuesday",
             "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _date(d: dt.date, rnd: random.Random) -> str:
    day, mon, mon3, year = d.day, d.strftime("%B"), d.strftime("%b"), d.year
    th = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(day, "th")
    wd = rnd.choice(_WEEKDAYS)
    forms = [f"{day} {mon3.lower()} {year}", f"{mon} {day}{th}, {year}", f"{day:02d}.{d.month:02d}.{year % 100:02d}",
             d.isoformat(), f"{day}{th} of {mon}", f"{mon3}. {day}", f"{wd} {d.month}/{day}", f"{d.month}/{day}/{year}",
             f"{day}/{d.month}/{year % 100:02d}", f"{day}-{mon3}-{year}", f"{mon} {year}", f"{day} {mon}",
             f"{mon3} {day}", f"{wd}, {day} {mon3} {year}", f"the {day}{th} of {mon} {year}", f"{day}.{d.month}.{year}",
             f"{year}/{d.month:02d}/{day:02d}", f"{mon} {day}", f"{day} {mon3}. {year}", f"{d.month:02d}/{day:02d}/{year}",
             f"{day}{th} {mon} {year}", f"{mon3} {day} '{year % 100:02d}", f"{day:02d}-{d.month:02d}-{year}"]
    return rnd.choice(forms)


def _phone(fk, loc, rnd, mim):
    import phonenumbers as pn

    pick = rnd.random()
    if pick < 0.1 and loc in ("en_US", "en_CA"):
        return f"{rnd.randint(200, 999)}-{rnd.randint(0, 9999):04d}"  # a 7-digit local number
    if pick < 0.2 and loc in ("en_GB", "en_IE"):
        n = f"7{rnd.randint(100, 999)}{rnd.randint(0, 999999):06d}"
        return rnd.choice([f"0{n[:4]} {n[4:]}", f"+44 {n[:4]} {n[4:]}", f"+44 (0){n[:4]} {n[4:7]} {n[7:]}",
                           f"0{n}", f"+44{n}", f"0{n[:4]}-{n[4:7]}-{n[7:]}"])
    if pick < 0.3 and mim is not None:
        from mimesis import Person
        return Person(mim[0], seed=rnd.randrange(2 ** 32)).telephone()
    raw = (getattr(fk, "phone_number", None) or fk.mobile_number)()
    if pick < 0.6:
        return raw
    try:
        num = pn.parse(raw, loc.split("_")[1])
    except pn.NumberParseException:
        return raw
    f = rnd.choice([pn.PhoneNumberFormat.NATIONAL, pn.PhoneNumberFormat.INTERNATIONAL, pn.PhoneNumberFormat.E164, None])
    if f is None:
        return re.sub(r"\D", "", pn.format_number(num, pn.PhoneNumberFormat.NATIONAL))
    return pn.format_number(num, f)


def _address(fk, loc, rnd, mim, lines: bool):
    pick = rnd.random()
    if pick < 0.15 and loc == "en_GB":
        flat = rnd.choice(["", "", f"Flat {rnd.randint(1, 40)}, "])
        parts = [f"{flat}{rnd.randint(1, 300)} {fk.last_name()} {rnd.choice(_UK_TYPES)}", fk.city(), fk.postcode()]
    elif pick < 0.15 and loc == "en_US":
        parts = [f"{rnd.randint(1, 9999)} {fk.last_name()} {rnd.choice(_US_TYPES)}"] + rnd.choice(
            [[], [fk.city()], [f"{fk.city()}, {fk.state_abbr()} {fk.zipcode()}"]])
    elif pick < 0.35 and mim is not None:
        from mimesis import Address
        a = Address(mim[0], seed=rnd.randrange(2 ** 32))
        tail = [f"{a.city()} {a.postal_code()}"] if loc.startswith("en") else [f"{a.postal_code()} {a.city()}"]
        parts = [a.address()] + rnd.choice([[], tail])
    elif pick < 0.5:
        parts = [fk.street_address()]
    elif pick < 0.6:
        parts = [fk.street_address(), fk.city()]
    else:
        parts = fk.address().split("\n")
    return ("\n" if lines and rnd.random() < 0.5 else ", ").join(parts)


def _id(fk, loc, kind, rnd):
    if kind == "ID":
        kind = rnd.choice(["SSN", "NATID", "PASSPORT", "IBAN", "CARD", "PLATE"])
    if kind == "SSN":
        s = fk.ssn() if loc == "en_US" else _us_ssn(rnd)
        return s if rnd.random() < 0.8 else s.replace("-", " ")
    if kind == "NATID":
        special = {"pt_BR": "cpf", "es_ES": "nif", "en_IN": "aadhaar_id", "cs_CZ": "birth_number"}
        return getattr(fk, special.get(loc, "ssn"))()
    if kind == "PASSPORT":
        return fk.passport_number()
    if kind == "IBAN":
        s = fk.iban()
        return s if rnd.random() < 0.5 else " ".join(s[i:i + 4] for i in range(0, len(s), 4))
    if kind == "CARD":
        s = fk.credit_card_number()
        sep = rnd.choice(["", " ", "-"])
        return sep.join(s[i:i + 4] for i in range(0, len(s), 4)) if sep else s
    return fk.license_plate()


def _us_ssn(rnd):
    """A US SSN from a Faker seeded by ``rnd`` (every value of the set comes from its seed)."""
    from faker import Faker

    fk = Faker("en_US")
    fk.seed_instance(rnd.randrange(2 ** 32))
    return fk.ssn()


def frames_set(n: int, part: str, seed: int):
    """``n`` labelled sentences ``(text, [(start, end, label)], meta)`` of the frames of ``part``."""
    import warnings

    from faker import Faker
    warnings.filterwarnings("ignore")
    try:
        from mimesis.locales import Locale
    except ImportError:
        Locale = None
    rnd = random.Random(seed)
    random.seed(seed)  # some Faker providers draw from the module's generator, not their instance's (es_ES nif)
    frames = FRAMES[0::2] if part == "dev" else FRAMES[1::2]
    fakers = {}
    for i, loc in enumerate(LOCALES):
        fakers[loc] = Faker(loc)
        fakers[loc].seed_instance(seed * 100 + i)
    out = []
    for _ in range(n):
        frame = rnd.choice(frames)
        loc = rnd.choice(ADDRESS_LOCALES if "{ADDRESS}" in frame else LOCALES)
        fk = fakers[loc]
        mim = (Locale(MIMESIS[loc]),) if Locale is not None and loc in MIMESIS else None
        text, gold = "", []
        for piece in re.split(r"(\{[A-Z]+\})", frame):
            if not (piece.startswith("{") and piece.endswith("}")):
                text += piece
                continue
            kind = piece[1:-1]
            if kind == "ADDRESS":
                label, value = "ADDRESS", _address(fk, loc, rnd, mim, "\n" in frame)
            elif kind == "PHONE":
                label, value = "PHONE", _phone(fk, loc, rnd, mim)
            elif kind == "DATE":
                label, value = "DATE", _date(fk.date_between(dt.date(1930, 1, 1), dt.date(2030, 12, 31)), rnd)
                if value.startswith("the "):  # "the 8th of June 1959": the article is no part of the date
                    text, value = text + "the ", value[4:]
            elif kind == "EMAIL":
                label, value = "EMAIL", rnd.choice([fk.email, fk.free_email, fk.company_email])()
            elif kind == "NAME":
                first = getattr(fk, "first_romanized_name", fk.first_name)
                last = getattr(fk, "last_romanized_name", fk.last_name)
                label, value = "NAME", f"{first()} {last()}"
            else:
                label, value = "ID", _id(fk, loc, kind, rnd)
            gold.append((len(text), len(text) + len(value), label))
            text += value
        r = rnd.random()
        casing = "as written" if r < 0.6 else "lower" if r < 0.8 else "upper"
        text = text.lower() if casing == "lower" else text.upper() if casing == "upper" else text
        out.append((text, gold, {"locale": loc, "casing": casing, "frame": frame}))
    return out


def detect(texts):
    from dptext.privacy.policy import get_policy

    pol = get_policy("entities")
    return [[(s.start, s.end, OURS.get(s.label, "OTHER")) for s in pol.detect(t)] for t in texts]


def score(items, spans):
    """``compare_presidio.score`` on this set: per (type, casing) clear chars, gold chars, full, n; per type the
    share of detected spans overlapping any labelled value."""
    from compare_presidio import score as shared

    g, _, prec = shared([(t, gold, dict(meta, set="frames3")) for t, gold, meta in items], spans)
    return {(k, c): a for (_, k, c), a in g.items()}, {k: a for (_, k), a in prec.items()}


def show_misses(items, spans, misses):
    """Print up to ``misses`` missed values per type and casing, and as many false spans per type."""
    shown = defaultdict(int)
    for (text, gold, meta), det in zip(items, spans):
        cov = bytearray(len(text))
        for s, e, _ in det:
            cov[s:e] = b"\x01" * (e - s)
        for s, e, kind in gold:
            if kind in TYPES and any(not cov[i] and not text[i].isspace() for i in range(s, e)) \
                    and shown[(kind, meta["casing"])] < misses:
                shown[(kind, meta["casing"])] += 1
                got = [text[a:b] for a, b, _ in det if a < e and b > s]
                print(f"MISS {kind:7} {meta['casing']:10} {meta['locale']} {text[s:e]!r} got {got} in {text!r}")
        for s, e, kind in det:
            if kind in TYPES and not any(s < ge and e > gs for gs, ge, _ in gold) and shown[("FP", kind)] < misses:
                shown[("FP", kind)] += 1
                print(f"FP   {kind:7} {text[s:e]!r} in {text!r}")


def table(g, prec):
    print("| type | casing | n | clear | full | prec |\n|---|---|---|---|---|---|")
    for kind in TYPES:
        for c in ("as written", "lower", "upper", "all"):
            a = g.get((kind, c))
            if a and a[3]:
                p = prec.get(kind) if c == "all" else None
                p = f"{p[0] / p[1]:.3f}" if p and p[1] else ""
                print(f"| {kind} | {c} | {a[3]} | {a[0] / a[1]:.3f} | {a[2] / a[3]:.3f} | {p} |")


def corpus_spans(path):
    from dptext.data import get_dataset
    from dptext.privacy.policy import get_policy

    from dptext.errors import PrivacyError

    pol = get_policy("entities")
    out = {}
    for name, limit in (("wiki", None), ("tweets", 8000), ("news", None)):
        rows = []
        for i, t in enumerate(get_dataset(name).corpus()[:limit]):
            try:
                spans = pol.detect(t)
            except PrivacyError as exc:  # a detector failed on this text: printed, not counted
                print(f"{name} {i}: {exc} in {t!r}", file=sys.stderr)
                continue
            rows += [[i, s.start, s.end, OURS.get(s.label), t[s.start:s.end]] for s in spans
                     if OURS.get(s.label) in TYPES]
        out[name] = rows
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f)


def fp_diff(old, new):
    a, b = (json.load(open(p, encoding="utf-8")) for p in (old, new))
    for name in b:
        for kind in TYPES:
            n_old = sum(r[3] == kind for r in a[name])
            n_new = sum(r[3] == kind for r in b[name])
            print(f"{name:6} {kind:7} {n_old:6} -> {n_new:6}")
        keys = {tuple(r[:4]) for r in a[name]}
        for r in b[name]:
            if tuple(r[:4]) not in keys:
                print(f"  + {name} {r[3]} {r[4]!r}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("dev", "check"), default="dev")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--misses", type=int, default=0)
    ap.add_argument("--fp")
    ap.add_argument("--fp-diff", nargs=2)
    args = ap.parse_args(argv)
    if args.fp_diff:
        return fp_diff(*args.fp_diff)
    if args.fp:
        return corpus_spans(args.fp)
    seed = args.seed if args.seed is not None else (11 if args.part == "dev" else 29)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # a Faker notice
        items = frames_set(args.n, args.part, seed)
    print(f"part {args.part}, seed {seed}, {len(items)} sentences, {len(FRAMES[0::2])} frames", file=sys.stderr)
    spans = detect([t for t, _, _ in items])
    if args.misses:
        show_misses(items, spans, args.misses)
    table(*score(items, spans))


if __name__ == "__main__":
    main()
