"""``hand``, ``hand2`` (150 sentences each) and ``hand3`` (300): the project's own tweets, wiki and news, labelled
by hand.

The other sets label only what they write in, so a name or a date that was already in a tweet counts against
precision there. Here every person's name, date, handle and health condition the sentence holds is labelled, so
precision means what it says. The sentences come from the half of the real set's sentences that its held parts use
(50 per dataset and part, 100 in ``hand3``; ``detect_hand.json`` says how they were drawn and what each label
covers); each is scored as written, lower-cased and upper-cased. Precision here is strict: a detected span counts
when it overlaps a label of its own type (an ID span also a handle, ``ACCOUNT``).
Every occurrence of a labelled string in its sentence is gold.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

MATCH = {"ID": ("ID", "ACCOUNT")}  # a detected type -> the labels it may overlap; any other type: its own


def hand_set(part: str = "hand"):
    doc = json.loads((Path(__file__).parent / "detect_hand.json").read_text(encoding="utf-8"))
    out = []
    for row in doc["parts"][part]:
        text = row["text"]
        found = {(value, kind): [(m.start(), m.end(), kind)
                                 for m in re.finditer(r"(?<!\w)" + re.escape(value) + r"(?!\w)", text)]
                 for value, kind in row["entities"]}
        assert all(found.values()), row  # every label is found in its sentence
        gold = sorted({g for spans in found.values() for g in spans})
        for casing, cased in (("as written", text), ("lower", text.lower()), ("upper", text.upper())):
            if len(cased) != len(text):  # a character whose case changes length (ß): offsets would move
                continue
            out.append((cased, gold, {"set": part, "casing": casing, "locale": row["source"], "strict": True}))
    return out
