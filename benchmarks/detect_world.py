"""A fourth labelled set for entity detection (used through ``detect_sets.build``): ``world``.

Sentence frames written for it (none of the other sets'), filled by Faker from locales no other set uses:
names from 22 locales of Africa, Asia and Europe (``en_NG``, ``yo_NG``, ``zu_ZA``, ``vi_VN``, ``zh_CN``
romanized …), addresses, phones, dates and IDs from 22 locales of Oceania, the Americas, India and Europe
(``en_AU``, ``en_IN``, ``es_MX``, ``ro_RO``, ``hr_HR`` …), so names and address formats are ones the
detectors were not built around. Weekdays and times of day in the frames are labelled OTHER (gold for
precision, outside the targets), like the organisations and places of the other sets. As in the other sets, ``dev`` uses half of the frames (even positions)
and the held parts the other half, with their own seeds. Casing: 60 % as written, 20 % lower, 20 % upper.
"""

from __future__ import annotations

import random
import re

NAME_LOCALES = ("en_IN", "vi_VN", "id_ID", "yo_NG", "zu_ZA", "sw", "zh_CN", "ja_JP", "tw_GH", "en_NG", "ha_NG",
                "ig_NG", "uz_UZ", "az_AZ", "ro_RO", "hu_HU", "lt_LT", "lv_LV", "et_EE", "sk_SK", "hr_HR", "sl_SI")
PLACE_LOCALES = ("en_IN", "en_AU", "en_CA", "en_IE", "en_NZ", "da_DK", "sv_SE", "no_NO", "fi_FI", "cs_CZ", "hu_HU",
                 "ro_RO", "pt_PT", "es_MX", "de_AT", "de_CH", "fr_CH", "fr_CA", "nl_BE", "es_AR", "sk_SK", "hr_HR")
NAME_FRAMES = [
    "{NAME} missed the bus again this morning.", "Can you check whether {FIRST} signed the form?",
    "Appointment moved: {TITLE} {LAST}, room 4, at noon.", "The award went to {NAME} and {NAME}.",
    "I think {FIRST} is still upset with {FIRST}.", "Minutes taken by {NAME}; apologies from {NAME}.",
    "Tenant: {NAME}", "Emergency contact - {NAME} (sister)",
    "Lunch with {FIRST} on friday?", "{LAST} scored twice before half time.",
    "Thanks to {NAME} for the lovely flowers!", "Was it {FIRST} or {FIRST} who booked the room?",
    "Prescribed by {TITLE} {NAME}.", "Reference letter for {NAME}, former intern.",
    "pick up {FIRST} from school at 3", "Interview with {NAME} rescheduled to next week.",
    "Our neighbour {FIRST} keeps parking in our spot.", "Photos from {FIRST}'s wedding are up.",
    "The driver, {NAME}, was not injured.", "Please welcome {NAME} to the team.",
    "Assigned to: {NAME}", "{NAME} wants a refund for order 5531.",
    "Happy birthday {FIRST}!!", "According to {LAST}, the report is late.",
    "Visitors today: {NAME}, {NAME}.", "I owe {FIRST} twenty dollars.",
    "Nurse {FIRST} took the blood sample.", "Coach {LAST} benched the whole team.",
    "Without {FIRST} we would have lost.", "{FIRST} from accounting says hi.",
    "Forwarding {NAME}'s CV as discussed.", "Patient {NAME}, 54, presented with chest pain.",
    "{FIRST} and I are flying home tomorrow.", "Sorry {FIRST}, I can't make it tonight.",
    "Judge {LAST} dismissed the case.", "the keys are with {FIRST} {LAST} next door",
    "Signed for by {NAME} at the front desk.", "Who is {FIRST}? No idea.",
    "{NAME} and {NAME} will present the results.", "Booking under the name {LAST}, table for two.",
]
PLACE_FRAMES = [
    "Please ship the order to {ADDRESS}.", "new address: {ADDRESS}",
    "We moved! Find us at {ADDRESS} from monday.", "Is {ADDRESS} the right billing address?",
    "The invoice went to {ADDRESS} by mistake.", "Return to sender - {ADDRESS}",
    "my mum still lives at {ADDRESS}", "Pick-up point: {ADDRESS}, ring twice.",
    "Call the front desk on {PHONE} if you are late.", "My mobile is {PHONE}, text first.",
    "You can reach the clinic at {PHONE}.", "{PHONE} is the number they gave me.",
    "Her date of birth is {DATE}.", "The lease ends on {DATE}.",
    "Appointment confirmed for {DATE} at 9.", "She was born on {DATE} in the old hospital.",
    "Contact: {PHONE} / {ADDRESS}", "The parcel from {ADDRESS} arrived on {DATE}.",
    "Dispatch to {ADDRESS}; phone {PHONE}.", "Since {DATE} the office is at {ADDRESS}.",
    "My social security number is {SSN}.", "{SSN} is on the form.", "Please wire it to {IBAN}.",
    "account {BBAN} was charged twice", "Card {CARD} expired last month.", "passport no. {PASSPORT}",
    "the car {PLATE} was parked outside", "tax id {SSN}", "Use {CARD} for the deposit.",
    "Her passport {PASSPORT} expires soon.", "IBAN: {IBAN}", "pay {IBAN} by friday", "I lost {CARD} yesterday",
    "license plate {PLATE}",
]
_DATE_FORMATS = ["%B %d, %Y", "%d %b %Y", "%d/%m/%Y", "%Y-%m-%d", "%d.%m.%Y", "%d %B %Y", "%m/%d/%y", "%A %d %B %Y",
                 "%b %d %Y"]


def _value(fk, kind, rnd):
    first = getattr(fk, "first_romanized_name", fk.first_name)  # zh_CN, ja_JP: the romanized names
    last = getattr(fk, "last_romanized_name", fk.last_name)
    makers = {
        "NAME": ("NAME", lambda: f"{first()} {last()}"), "FIRST": ("NAME", first), "LAST": ("NAME", last),
        "TITLE": (None, lambda: rnd.choice(["Mr.", "Mrs", "Dr.", "Ms", "Prof."])),
        "ADDRESS": ("ADDRESS", lambda: fk.address().replace("\n", ", ")), "PHONE": ("PHONE", fk.phone_number),
        "DATE": ("DATE", lambda: fk.date_between("-80y", "+1y").strftime(rnd.choice(_DATE_FORMATS))),
        "SSN": ("ID", fk.ssn), "IBAN": ("ID", fk.iban), "BBAN": ("ID", fk.bban), "CARD": ("ID", fk.credit_card_number),
        "PASSPORT": ("ID", fk.passport_number), "PLATE": ("ID", fk.license_plate),
    }
    label, make = makers[kind]
    return label, make()


def _when(text):
    """A frame's own text, its weekdays and times of day labelled OTHER: date words the detectors may mark."""
    pieces = re.split(r"(?i)\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|noon)\b", text)
    return [("OTHER" if i % 2 else None, p) for i, p in enumerate(pieces)]


def world_set(n: int, part: str, seed: int):
    from faker import Faker

    from detect_sets import _fill, _template_parts

    rnd = random.Random(seed)
    half = slice(0, None, 2) if part == "dev" else slice(1, None, 2)
    frames = NAME_FRAMES[half] + PLACE_FRAMES[half]
    fakers = {}
    for i, loc in enumerate(sorted(set(NAME_LOCALES + PLACE_LOCALES))):
        fakers[loc] = Faker(loc)
        fakers[loc].seed_instance(seed * 100 + i)
    out = []
    for _ in range(n):
        frame = rnd.choice(frames)
        loc = rnd.choice(NAME_LOCALES if frame in NAME_FRAMES else PLACE_LOCALES)
        parts = [part for p in _template_parts(frame)
                 for part in ([_value(fakers[loc], p[1:-1], rnd)] if p.startswith("{") else _when(p))]
        out.append(_fill(parts, rnd, {"set": "world", "locale": loc}))
    return out
