"""The words that name an identifier, in one place for the two detectors that read them.

* ``ids.KEYED_ID`` takes the value after a keyword of :data:`KEYWORDS` ("passport number is
  X123", "Order ID: 5521");
* ``addresses`` reads "ID" after a word of :data:`LABELS` as that identifier's label, never as
  Idaho's state code: "Patient ID 2231" and "order id 40913" are no city, state and ZIP, while
  "Boise, ID 83702" is.
"""

from __future__ import annotations

import re

# keywords whose value follows them; "ID" itself is one ("ID: 88213")
KEYWORDS = (r"ID|MRN|SSN|NHS|social\s+security|national\s+insurance|passport|account|acct|policy|member|patient|"
            r"record|licen[cs]e|case|customer|employee|badge|student|invoice|order|reference|ref|tax|insurance|"
            r"claim|ticket|serial")
# words that label an identifier only in "<word> ID" ("staff ID", "user id"): alone, "staff 1200" or "user
# 2015" are no identifier
_LABEL_ONLY = r"staff|user|card|client|national"
LABELS = re.compile(rf"(?i)\b(?:{KEYWORDS}|{_LABEL_ONLY})\s{{1,3}}ID\b")
