"""The particles of a name around a found part of it.

:func:`bridge` runs inside :func:`dptext.privacy.lexical.refine`, after the name lists and spaCy have each found
their spans: a particle between a ``PERSON`` span and another proper-name span (``XAVI DIE BONT``, ``LYA DO
ROSÁRIO``, ``Phileine 's Gravensande``) joins them as one name, and a lower-case particle right before a
``PERSON`` span (``ten Poolhuis``) is part of it.
"""

from __future__ import annotations

import re

from dptext.privacy.names import _PARTICLES
from dptext.privacy.recognizers import Detection

# spaCy's labels of proper names that are no person's: where one holds a name-list PERSON, it is the better reading
NOT_PERSONS = frozenset("NORP FAC ORG GPE LOC PRODUCT EVENT WORK_OF_ART LAW LANGUAGE".split())


# a particle inside a name between two found parts of it ("XAVI DIE BONT", "LYA DO ROSÁRIO", "Phileine 's
# Gravensande"), or written in lower case right before one ("ten Poolhuis", "van Gogh")
_BRIDGE = re.compile(r"[ \t]{1,2}(" + "|".join(sorted((_PARTICLES - {"d'", "l'", "'t"}) | {"do", "das", "die", "y", "e",
                     "al", "el"})) + r"|['’][st])[ \t]{1,2}", re.IGNORECASE)
_LEADING = re.compile(r"(?<![\w'’-])(?:" + "|".join(sorted(_PARTICLES - {"d'", "l'", "'t"})) + r")[ \t]")


def bridge(text, detections):
    """A particle between a ``PERSON`` span and another span of a proper name (a person, place, group or
    organisation: spaCy may read one part of a foreign name as either) joins them as part of the name; so does a
    lower-case particle right before a ``PERSON`` span."""
    persons = [d for d in detections if d.label == "PERSON"]
    if not persons:
        return detections
    names = [d for d in detections if d.label == "PERSON" or d.label in NOT_PERSONS]
    starts = {}
    for d in names:
        starts.setdefault(d.start, []).append(d)
    out = list(detections)
    for d in names:
        m = _BRIDGE.match(text, d.end)
        if m is None:
            continue
        for o in starts.get(m.end(), ()):
            if "PERSON" in (d.label, o.label):  # the spaces go to the person's side, so its span reads on
                out.append(Detection(d.end if d.label == "PERSON" else m.start(1),
                                     o.start if o.label == "PERSON" else m.end(1), "PERSON", "gazetteer"))
                break
    for d in persons:
        b = text.rfind(" ", 0, max(d.start - 1, 0)) + 1
        if _LEADING.fullmatch(text, b, d.start):
            out.append(Detection(b, d.start, "PERSON", "gazetteer"))
    return out
