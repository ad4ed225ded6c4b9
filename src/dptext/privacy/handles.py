"""Social-media handles (``HANDLE``): ``@Rene_M_Gomez``, ``@SusanKare``, ``@bradsmithjr``.

A handle names an account, and so a person, as directly as an email address does. It is an ``@`` that
follows no word character, ``.``, ``@`` or ``/`` (the ``@`` of an email or of a URL path such as
``medium.com/@jsmith`` starts none), then 1 to 30 of ``A-Z a-z 0-9 _`` holding a letter, in any casing.
A dot may come right before the ``@`` when no word character, dot, ``@`` or ``/`` comes before it: a tweet
that opens ``.@IKEA`` makes its reply public that way (``jo.@example.com`` stays an email's). A time
written after an ``@`` (``@10pm``, ``@7:30``) is no handle. The span covers the ``@`` and the name.
"""

from __future__ import annotations

import re

HANDLE = re.compile(r"(?<![\w@/])(?<![\w.@/]\.)@(?=[A-Za-z0-9_]{0,29}[A-Za-z])[A-Za-z0-9_]{1,30}(?![A-Za-z0-9_])")
# "@10pm", "@10a.m." (the name stops at the dot), "@7:30" (its name "7" holds no letter anyway)
_TIME = re.compile(r"@\d+(?::\d\d)?(?:[ap]m?)?", re.IGNORECASE)


def find(text: str):
    """``(start, end)`` of each handle in ``text``, ``@`` included."""
    for m in HANDLE.finditer(text):
        if not _TIME.fullmatch(m.group(0)):
            yield m.start(), m.end()
